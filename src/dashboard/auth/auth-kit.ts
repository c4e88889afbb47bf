/**
 * What the sign-in, account and /auth routes share: their services, answering with a page, redirects,
 * and cookies.
 */
import type { SessionsStore, UsersStore } from '../../core/store/identity-store.js';
import type { RouteContext } from '../../http/server.js';
import type { SecretBox } from '../../store/secret-box.js';
import type { OidcProviderConfig } from '../../config/dashboard.js';
import { setCookie, type CookieNames } from './cookies.js';
import type { DashboardGuard } from './dashboard-route.js';
import { setSecurityHeaders } from './security-headers.js';
import type { LiveSession, Sessions } from './sessions.js';
import type { AttemptThrottle } from './throttle.js';

export interface AuthDeps {
  readonly users: UsersStore;
  readonly sessions: Sessions;
  readonly sessionsRepo: SessionsStore;
  readonly guard: DashboardGuard;
  readonly cookies: CookieNames;
  readonly csp: string;
  readonly box: SecretBox;
  readonly now: () => number;
  /**
   * Failed passwords and second factors per account and per address; OpenID Connect starts per address
   * and overall. Kept where the rate limits live (issue 31: across workers and replicas).
   */
  readonly throttles: { readonly password: AttemptThrottle; readonly secondFactor: AttemptThrottle; readonly oidcStart: AttemptThrottle };
  readonly providers: readonly OidcProviderConfig[];
  readonly publicOrigin: string | null;
  /** The origin of this request as the browser sees it (public_url, else scheme and Host). */
  originOf(ctx: RouteContext): string;
  /** Drop every cached credential: a user's keys change what they reach (store/catalog.ts). */
  reloadCredentials(): void;
}

export const HOME_PATH = '/dashboard/projects';

export function sendPage(ctx: RouteContext, deps: Pick<AuthDeps, 'csp'>, status: number, page: string): void {
  setSecurityHeaders(ctx.reply, deps.csp);
  ctx.reply.setHeader('Cache-Control', 'no-store');
  ctx.reply.send(status, page, 'text/html; charset=utf-8');
}

export function redirect(ctx: RouteContext, deps: Pick<AuthDeps, 'csp'>, location: string): void {
  setSecurityHeaders(ctx.reply, deps.csp);
  ctx.reply.setHeader('Cache-Control', 'no-store');
  ctx.reply.setHeader('Location', location);
  ctx.reply.empty(303);
}

export function setSessionCookie(ctx: RouteContext, cookies: CookieNames, session: LiveSession | null): void {
  ctx.reply.setHeader('Set-Cookie', setCookie(cookies.session, session?.id ?? '', cookies.secure, session ? null : 0));
}

export async function readForm(ctx: RouteContext): Promise<URLSearchParams> {
  return new URLSearchParams((await ctx.req.body()).toString('utf8'));
}

export const clientOf = (ctx: RouteContext): { ip: string; userAgent: string } => ({
  ip: ctx.req.clientIp,
  userAgent: ctx.req.header('user-agent') ?? '',
});

export const minutes = (ms: number): number => Math.max(1, Math.ceil(ms / 60_000));
