/**
 * Sign-in (issue 22; SPEC "Dashboard login with two-factor", Authentication 13-14):
 * `GET/POST /dashboard/login` (password), `GET/POST /dashboard/login/totp` (the second factor, within 5
 * minutes of the password), `POST /dashboard/logout`.
 *
 * An unknown e-mail and a wrong password get the same page, status and (near enough) time: the decoy hash
 * is verified when no user matches. The sign-in form has no session and so no CSRF token; it is refused
 * from another origin (login CSRF), and it can only ever sign the submitter in.
 */
import type { RouteContext, RouteDef } from '../../http/server.js';
import { csrfField, html, LOGIN_PATH, LOGOUT_PATH, pageShell, SECOND_FACTOR_PATH, type Markup } from '../html.js';
import { clientOf, HOME_PATH, readForm, redirect, sendPage, setSessionCookie, type AuthDeps } from './auth-kit.js';
import { readCookie } from './cookies.js';
import { safeNext } from './dashboard-route.js';
import { decoyHash, verifyPassword } from './passwords.js';
import { checkSecondFactor } from './second-factor.js';
import type { LiveSession } from './sessions.js';
import { refusalOf } from './throttle.js';

const notice = (kind: 'error' | 'ok', text: string): Markup => html`<p class="notice ${kind}" role="${kind === 'error' ? 'alert' : 'status'}">${text}</p>`;

/**
 * The sign-in page: the product's name, the refusal of the last attempt (role="alert"), the password form,
 * and each configured identity provider (SPEC Authentication 12), which signs in only a user who connected
 * it on the account page.
 */
function loginPage(deps: AuthDeps, next: string | null, message: Markup, email = ''): string {
  const providers = deps.providers.map(
    (p) => html`<li><a class="button" href="/auth/${p.id}${next ? `?next=${encodeURIComponent(next)}` : ''}">Sign in with ${p.name ?? p.id}</a></li>`,
  );
  return pageShell(
    { title: 'Sign in' },
    html`<section class="card narrow signin"><h1>Sign in to Switchboard</h1>
<p class="muted">The dashboard of this Switchboard gateway: API keys, routing, webhooks, usage and approvals of your projects.</p>${message}
<form method="post" action="${LOGIN_PATH}" class="stacked">
<input type="hidden" name="next" value="${next ?? ''}">
<label>E-mail <input type="email" name="email" autocomplete="username" required value="${email}"${email === '' ? html` autofocus` : ''}></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required${email === '' ? '' : html` autofocus`}></label>
<button type="submit">Sign in</button>
</form>
${
  providers.length > 0
    ? html`<div class="providers"><p class="or">or sign in with an identity provider you connected on your account page</p><ul class="providers">${providers}</ul></div>`
    : ''
}
<p class="muted small">No account yet? An owner of a project adds you on its Members page, or an operator runs <code>switchboard users create</code>.</p></section>`,
  );
}

function secondFactorPage(session: LiveSession, message: Markup): string {
  return pageShell(
    { title: 'Two-factor code', csrfToken: session.csrfToken },
    html`<section class="card narrow"><h1>Two-factor code</h1>${message}
<p>Enter the 6-digit code from your authenticator app, or one of your backup codes. You have 5 minutes from your password.</p>
<form method="post" action="${SECOND_FACTOR_PATH}">${csrfField(session.csrfToken)}
<label>Code <input name="code" inputmode="numeric" autocomplete="one-time-code" required autofocus></label>
<button type="submit">Continue</button>
</form>
<p><a href="${LOGIN_PATH}">Start over</a></p></section>`,
  );
}

/** Signed in at last: a new session id (never the one from before sign-in), then where the user was going. */
export async function completeSignIn(ctx: RouteContext, deps: AuthDeps, userId: string, hasTotp: boolean, next: string | null, replacing: string | null): Promise<void> {
  const stage = hasTotp ? 'totp' : 'full';
  // Checked again here: a stored `next` (a second-factor session's, an OIDC flow's) may predate the check.
  const target = safeNext(next);
  const session = await deps.sessions.start({ userId, stage, ...clientOf(ctx), nextPath: target, replacing });
  setSessionCookie(ctx, deps.cookies, session);
  redirect(ctx, deps, hasTotp ? SECOND_FACTOR_PATH : (target ?? HOME_PATH));
}

export function loginRoutes(deps: AuthDeps): RouteDef[] {
  const { users, throttles } = deps;
  const cookieOf = (ctx: RouteContext): string | null => readCookie(ctx.req.header('cookie'), deps.cookies.session);

  return [
    {
      method: 'GET',
      pattern: LOGIN_PATH,
      family: 'dashboard',
      auth: { kind: 'public' },
      async handle(ctx) {
        const q = ctx.req.searchParams();
        const next = safeNext(q.get('next'));
        if (await deps.guard.signedIn(ctx.req)) return redirect(ctx, deps, next ?? HOME_PATH);
        const message = q.has('expired')
          ? notice('error', 'The two-factor step took longer than 5 minutes: sign in again.')
          : q.has('signed_out')
            ? notice('ok', 'You are signed out.')
            : q.has('password_changed')
              ? notice('ok', 'Your password was changed and every session ended: sign in with the new password.')
              : '';
        sendPage(ctx, deps, 200, loginPage(deps, next, message));
      },
    },
    {
      method: 'POST',
      pattern: LOGIN_PATH,
      family: 'dashboard',
      auth: { kind: 'public' },
      bodyLimit: 16 * 1024,
      async handle(ctx) {
        const form = await readForm(ctx);
        const next = safeNext(form.get('next'));
        const email = (form.get('email') ?? '').trim().toLowerCase();
        const password = form.get('password') ?? '';
        if (!deps.guard.sameOrigin(ctx.req)) return sendPage(ctx, deps, 403, loginPage(deps, next, notice('error', 'Sign in from the dashboard page itself.'), email));
        // Counted as a failure before the lookup and the hash (issue 31): concurrent guesses cannot all pass a
        // check made before any of them failed, and a refused one costs no scrypt. Known or not, an e-mail
        // takes the same path, so the refusal tells nothing either.
        const attempt = await throttles.password.attempt({ account: email, address: ctx.req.clientIp });
        if (attempt.kind !== 'admitted') {
          const refused = refusalOf(ctx, attempt, 'failed sign-ins');
          return sendPage(ctx, deps, refused.status, loginPage(deps, next, notice('error', refused.message), email));
        }
        const user = email === '' ? null : await users.byEmail(email);
        const ok = await verifyPassword(password, user?.passwordHash ?? (await decoyHash()));
        if (!user || !user.passwordHash || !ok) {
          return sendPage(ctx, deps, 401, loginPage(deps, next, notice('error', 'The e-mail or the password is wrong: check both and try again.'), email));
        }
        await attempt.succeeded();
        await completeSignIn(ctx, deps, user.id, user.totpSealed !== null, next, cookieOf(ctx));
      },
    },
    {
      method: 'GET',
      pattern: SECOND_FACTOR_PATH,
      family: 'dashboard',
      auth: { kind: 'in-handler', credential: 'the sign-in\'s second-factor session', why: 'a session not yet signed in: the handler resolves it (and its CSRF token on POST)' },
      async handle(ctx) {
        const found = await deps.sessions.resolve(cookieOf(ctx), 'totp');
        if (!found) return redirect(ctx, deps, `${LOGIN_PATH}?expired=1`);
        sendPage(ctx, deps, 200, secondFactorPage(found.session, ''));
      },
    },
    {
      method: 'POST',
      pattern: SECOND_FACTOR_PATH,
      family: 'dashboard',
      auth: { kind: 'in-handler', credential: 'the sign-in\'s second-factor session', why: 'a session not yet signed in: the handler resolves it (and its CSRF token on POST)' },
      bodyLimit: 16 * 1024,
      async handle(ctx) {
        const found = await deps.sessions.resolve(cookieOf(ctx), 'totp');
        // Past 5 minutes the half-done sign-in is gone: it starts over (SPEC "Dashboard login with two-factor").
        if (!found) return redirect(ctx, deps, `${LOGIN_PATH}?expired=1`);
        const { session, user } = found;
        await deps.guard.requireCsrf(ctx.req, session.csrfToken);
        const code = (await readForm(ctx)).get('code') ?? '';
        const verdict = await checkSecondFactor(ctx, deps, user, code, { backupCodes: true });
        if (verdict !== 'ok') return sendPage(ctx, deps, verdict.status, secondFactorPage(session, notice('error', verdict.message)));
        await completeSignIn(ctx, deps, user.id, false, session.record.nextPath, session.id);
      },
    },
    {
      method: 'POST',
      pattern: LOGOUT_PATH,
      family: 'dashboard',
      auth: { kind: 'in-handler', credential: 'the dashboard session, when there is one', why: 'signing out without a session is not an error' },
      async handle(ctx) {
        const who = await deps.guard.signedIn(ctx.req);
        if (who) {
          await deps.guard.requireCsrf(ctx.req, who.session.csrfToken);
          await deps.sessions.end(who.session.id);
        }
        setSessionCookie(ctx, deps.cookies, null);
        redirect(ctx, deps, `${LOGIN_PATH}?signed_out=1`);
      },
    },
  ];
}
