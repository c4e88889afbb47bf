/**
 * Markup shared by the sign-in pages and the operator pages: the escaping `html` template (from
 * pages/markup.ts, one implementation), and the shell of a page outside any project (sign-in, the
 * second-factor step, the account page): our stylesheet only, the session's CSRF token in
 * `<meta name="csrf-token">` (SPEC Authentication 16), and a nav when someone is signed in.
 */
import { html, type Markup, type SafeHtml } from './pages/markup.js';
import { PROJECTS_PATH, STYLESHEET_PATH } from './pages/paths.js';

export { escapeHtml, html, SafeHtml, type Markup } from './pages/markup.js';

export const LOGIN_PATH = '/dashboard/login';
export const SECOND_FACTOR_PATH = '/dashboard/login/totp';
export const ACCOUNT_PATH = '/dashboard/account';
export const LOGOUT_PATH = '/dashboard/logout';

export interface Shell {
  readonly title: string;
  /** The session's token; absent before sign-in. */
  readonly csrfToken?: string;
  /** Signed in: the name shown, with the nav to projects, account and sign-out. */
  readonly signedInAs?: string;
}

/** A hidden form field carrying the CSRF token, for plain HTML forms. */
export const csrfField = (token: string): SafeHtml => html`<input type="hidden" name="csrf_token" value="${token}">`;

export function pageShell(shell: Shell, body: Markup): string {
  const nav =
    shell.signedInAs !== undefined && shell.csrfToken !== undefined
      ? html`<nav class="who"><a href="${PROJECTS_PATH}">Projects</a> · <a class="account" href="${ACCOUNT_PATH}" title="Your account: password, two-factor, sessions, sign-in providers">Account</a> (${shell.signedInAs}) · <form class="inline" method="post" action="${LOGOUT_PATH}">${csrfField(shell.csrfToken)}<button type="submit" class="link">Sign out</button></form></nav>`
      : '';
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${shell.csrfToken !== undefined ? html`<meta name="csrf-token" content="${shell.csrfToken}">` : ''}
<title>${shell.title} · Switchboard</title>
<link rel="stylesheet" href="${STYLESHEET_PATH}">
</head>
<body>
<header class="top"><a class="brand" href="${PROJECTS_PATH}">Switchboard</a>${nav}</header>
<main>
${body}
</main>
</body>
</html>
`.value;
}
