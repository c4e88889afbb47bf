/**
 * `GET /auth/{provider}` and `GET /auth/{provider}/callback` (SPEC "Dashboard authentication routes",
 * Authentication 12). An identity signs in the user it was connected to (account page, while signed in
 * with the password). An account with the same e-mail is never attached automatically, verified or not;
 * an identity nobody connected is refused, unless the provider has `allow_signup` (then a new user with no
 * project role is made, when no account has that e-mail). Two-factor applies as after a password.
 */
import type { RouteContext, RouteDef } from '../../http/server.js';
import { ACCOUNT_PATH, html, LOGIN_PATH, pageShell } from '../html.js';
import { redirect, sendPage, type AuthDeps } from './auth-kit.js';
import type { OidcProviderConfig } from '../../config/dashboard.js';
import { readCookie, setCookie } from './cookies.js';
import { safeNext } from './dashboard-route.js';
import { completeSignIn } from './login-routes.js';
import { finishOidcFlow, FLOW_MS, startOidcFlow } from './oidc-flow.js';
import { sha256 } from './secrets.js';
import { refusalOf } from './throttle.js';
import { newUserId } from './user-admin.js';

function refusal(ctx: RouteContext, deps: AuthDeps, status: number, title: string, text: string, back = LOGIN_PATH): void {
  sendPage(ctx, deps, status, pageShell({ title }, html`<section class="card narrow"><h1>${title}</h1><p class="notice error" role="alert">${text}</p><p><a href="${back}">Back</a></p></section>`));
}

export function oidcRoutes(deps: AuthDeps): RouteDef[] {
  const { users } = deps;
  /** The provider the path names, or null once the 404 page is sent. */
  const providerOf = (ctx: RouteContext): OidcProviderConfig | null => {
    const provider = deps.providers.find((p) => p.id === ctx.req.params.provider) ?? null;
    if (!provider) refusal(ctx, deps, 404, 'Unknown sign-in provider', `No sign-in provider is called ${ctx.req.params.provider ?? ''}.`);
    return provider;
  };

  return [
    {
      method: 'GET',
      pattern: '/auth/:provider',
      family: 'dashboard',
      auth: { kind: 'public' },
      async handle(ctx) {
        const provider = providerOf(ctx);
        if (!provider) return;
        // Each start stores a flow row: counted (and refused past the limit) before that (issue 31).
        const attempt = await deps.throttles.oidcStart.attempt({ address: ctx.req.clientIp });
        if (attempt.kind !== 'admitted') {
          const refused = refusalOf(ctx, attempt, 'sign-ins started');
          return refusal(ctx, deps, refused.status, refused.status === 503 ? 'Sign-in unavailable' : 'Too many sign-ins started', refused.message);
        }
        try {
          await startOidcFlow(ctx, deps, provider, { connectUserId: null, next: safeNext(ctx.req.searchParams().get('next')) });
        } catch {
          refusal(ctx, deps, 502, 'Sign-in provider unavailable', `${provider.name ?? provider.id} could not be reached: try again later, or sign in with your password.`);
        }
      },
    },
    {
      method: 'GET',
      pattern: '/auth/:provider/callback',
      family: 'dashboard',
      auth: { kind: 'public' },
      async handle(ctx) {
        const provider = providerOf(ctx);
        if (!provider) return;
        const cookie = readCookie(ctx.req.header('cookie'), deps.cookies.oidcFlow);
        ctx.reply.setHeader('Set-Cookie', setCookie(deps.cookies.oidcFlow, '', deps.cookies.secure, 0));
        const flow = cookie === null ? null : await deps.sessionsRepo.takeFlow(sha256(cookie));
        if (!flow || flow.providerId !== provider.id || deps.now() - flow.createdAt > FLOW_MS) {
          return refusal(ctx, deps, 400, 'Sign-in not completed', 'This sign-in expired or was started in another browser: start it again.');
        }
        const back = flow.connectUserId !== null ? ACCOUNT_PATH : LOGIN_PATH;
        const denied = ctx.req.searchParams().get('error');
        if (denied !== null) return refusal(ctx, deps, 400, 'Sign-in not completed', `${provider.name ?? provider.id} answered: ${denied}.`, back);
        let identity;
        try {
          identity = await finishOidcFlow(ctx, deps, provider, flow);
        } catch (err) {
          // A state, nonce, PKCE, signature, issuer or audience check failed: never sign anyone in on it.
          return refusal(ctx, deps, 400, 'Sign-in not completed', `The answer of ${provider.name ?? provider.id} did not pass the checks (${(err as Error).message}).`, back);
        }
        const linked = await users.identity(provider.id, identity.subject);

        if (flow.connectUserId !== null) {
          const who = await deps.guard.signedIn(ctx.req);
          if (!who || who.user.id !== flow.connectUserId) {
            return refusal(ctx, deps, 403, 'Not connected', 'Connect a provider from your account page while signed in.');
          }
          if (linked && linked.userId !== who.user.id) {
            return refusal(ctx, deps, 409, 'Not connected', 'This identity is already connected to another account.', ACCOUNT_PATH);
          }
          if (!linked) await users.linkIdentity({ providerId: provider.id, subject: identity.subject, userId: who.user.id, email: identity.email, now: deps.now() });
          return redirect(ctx, deps, `${ACCOUNT_PATH}#providers`);
        }

        let userId = linked?.userId ?? null;
        if (userId === null && provider.allow_signup) userId = await signUp(deps, provider, identity);
        const user = userId === null ? null : await users.byId(userId);
        if (!user) {
          return refusal(
            ctx,
            deps,
            403,
            'No account for this identity',
            `No Switchboard account is connected to this ${provider.name ?? provider.id} identity. If you have an account, sign in with your password and connect ${provider.name ?? provider.id} on your account page.`,
          );
        }
        await completeSignIn(ctx, deps, user.id, user.totpSealed !== null, flow.nextPath, readCookie(ctx.req.header('cookie'), deps.cookies.session));
      },
    },
  ];
}

/** A new user for an identity nobody connected, when allowed; never one whose e-mail an account already has. */
async function signUp(
  deps: AuthDeps,
  provider: OidcProviderConfig,
  identity: { subject: string; email: string | null; emailVerified: boolean; name: string | null },
): Promise<string | null> {
  if (identity.email === null || !identity.emailVerified || (await deps.users.byEmail(identity.email))) return null;
  const id = newUserId();
  const now = deps.now();
  await deps.users.create({ id, email: identity.email, name: identity.name ?? identity.email, passwordHash: null, now }, []);
  await deps.users.linkIdentity({ providerId: provider.id, subject: identity.subject, userId: id, email: identity.email, now });
  return id;
}
