/**
 * The account page (issue 22): two-factor set-up and removal, backup codes, the user's sessions with
 * revoke, connected identity providers (connect, disconnect: SPEC Authentication 12), password change.
 */
import type { IdentityRecord, SessionRecord } from '../../core/store/identity-store.js';
import { ACCOUNT_PATH, csrfField, html, pageShell, SafeHtml, type Markup } from '../html.js';
import type { OidcProviderConfig } from '../../config/dashboard.js';
import type { SignedIn } from './dashboard-route.js';

export interface AccountView {
  readonly who: SignedIn;
  readonly sessions: readonly SessionRecord[];
  readonly identities: readonly IdentityRecord[];
  readonly providers: readonly OidcProviderConfig[];
  readonly unusedBackupCodes: number;
  readonly notice?: { readonly kind: 'ok' | 'error'; readonly text: string } | undefined;
  /** Shown once, right after they were made. */
  readonly newBackupCodes?: readonly string[] | undefined;
}

const when = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z').replace('T', ' ');

const codeField = (label: string): Markup =>
  html`<label>${label} <input name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" required></label>`;

export function accountPage(v: AccountView): string {
  const { who } = v;
  const csrf = who.session.csrfToken;
  const enabled = who.user.totpSealed !== null;
  const notice = v.notice ? html`<p class="notice ${v.notice.kind}" role="${v.notice.kind === 'error' ? 'alert' : 'status'}">${v.notice.text}</p>` : '';
  const codes = v.newBackupCodes
    ? html`<div class="card"><h2>Your backup codes</h2><p>Each works once in place of an authenticator code. They are shown only now: keep them somewhere safe.</p><ul class="backup-codes">${v.newBackupCodes.map((c) => html`<li><code>${c}</code></li>`)}</ul></div>`
    : '';
  const twoFactor = enabled
    ? html`<p>Two-factor sign-in is <strong>on</strong>. Unused backup codes: ${v.unusedBackupCodes}.</p>
<form method="post" action="${ACCOUNT_PATH}/backup-codes">${csrfField(csrf)}${codeField('Authenticator code')}<button type="submit">Make new backup codes</button></form>
<form method="post" action="${ACCOUNT_PATH}/totp/disable">${csrfField(csrf)}${codeField('Authenticator code')}<button type="submit" class="danger">Turn two-factor off</button></form>`
    : html`<p>Two-factor sign-in is <strong>off</strong>.</p><p><a class="button" href="${ACCOUNT_PATH}/totp/setup">Set up an authenticator app</a></p>`;
  const sessions = v.sessions.map((s) => {
    const current = s.idHash === who.session.record.idHash;
    return html`<tr><td>${when(s.createdAt)}</td><td>${when(s.lastSeenAt)}</td><td>${s.ip}</td><td>${s.userAgent}</td><td>${
      current
        ? html`<span class="muted">this session</span>`
        : html`<form method="post" action="${ACCOUNT_PATH}/sessions/revoke">${csrfField(csrf)}<input type="hidden" name="session" value="${s.idHash}"><button type="submit">Revoke</button></form>`
    }</td></tr>`;
  });
  const providers = v.providers.map((p) => {
    const linked = v.identities.find((i) => i.providerId === p.id);
    const label = p.name ?? p.id;
    return linked
      ? html`<li>${label}: connected${linked.email ? html` as ${linked.email}` : ''} <form class="inline" method="post" action="${ACCOUNT_PATH}/identities/${p.id}/disconnect">${csrfField(csrf)}<button type="submit">Disconnect</button></form></li>`
      : html`<li>${label}: not connected <form class="inline" method="post" action="${ACCOUNT_PATH}/identities/${p.id}/connect">${csrfField(csrf)}<button type="submit">Connect</button></form></li>`;
  });
  return pageShell(
    { title: 'Account', csrfToken: csrf, signedInAs: who.user.name || who.user.email },
    html`<h1>Account</h1>${notice}${codes}
<section class="card"><h2>Signed in as</h2><p>${who.user.name} &lt;${who.user.email}&gt; · <code>${who.user.id}</code></p></section>
<section class="card" id="two-factor"><h2>Two-factor sign-in</h2>${twoFactor}</section>
<section class="card" id="sessions"><h2>Sessions</h2><table><thead><tr><th>Signed in</th><th>Last active</th><th>Address</th><th>Browser</th><th></th></tr></thead><tbody>${sessions}</tbody></table></section>
${v.providers.length > 0 ? html`<section class="card" id="providers"><h2>Sign-in providers</h2><ul>${providers}</ul></section>` : ''}
<section class="card" id="password"><h2>Password</h2><p>Changing it ends every session, this one included.</p>
<form method="post" action="${ACCOUNT_PATH}/password">${csrfField(csrf)}
<label>Current password <input type="password" name="current" autocomplete="current-password" required></label>
<label>New password <input type="password" name="password" autocomplete="new-password" minlength="12" required></label>
<button type="submit">Change password</button></form></section>`,
  );
}

/** `svg` is our own QR code markup (qrcode's output for our URI), trusted as is. */
export function totpSetupPage(who: SignedIn, sealedSecret: string, secret: string, uri: string, svg: string, error: string | null): string {
  const csrf = who.session.csrfToken;
  return pageShell(
    { title: 'Set up two-factor', csrfToken: csrf, signedInAs: who.user.name || who.user.email },
    html`<h1>Set up two-factor sign-in</h1>${error ? html`<p class="notice error" role="alert">${error}</p>` : ''}
<section class="card"><p>Scan this code with an authenticator app, then type the 6-digit code it shows.</p>
<div class="qr">${new SafeHtml(svg)}</div>
<p>Or enter the key by hand: <code class="totp-secret">${secret}</code></p>
<p class="muted"><code>${uri}</code></p>
<form method="post" action="${ACCOUNT_PATH}/totp/enable">${csrfField(csrf)}<input type="hidden" name="enrolment" value="${sealedSecret}">${codeField('Code')}<button type="submit">Turn on</button></form>
<p><a href="${ACCOUNT_PATH}">Cancel</a></p></section>`,
  );
}
