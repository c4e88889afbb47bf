/**
 * Composition of dashboard sign-in (issue 22): the session guard the operator pages go through
 * (`dashboardRoute`, dashboard-route.ts) and the routes of sign-in, the account page and `/auth/{provider}`.
 * main.ts builds this once and registers `routes` plus every page wrapped by `dashboardRoute`.
 */
import type { Config } from '../../config.js';
import type { ThrottlePort } from '../../core/coordination/throttle-port.js';
import type { IdentityStore } from '../../core/store/identity-store.js';
import type { RouteContext, RouteDef } from '../../http/server.js';
import type { SecretBox } from '../../store/secret-box.js';
import type { PageDef } from '../pages/page-kit.js';
import { accountRoutes } from './account-routes.js';
import type { AuthDeps } from './auth-kit.js';
import { cookieNames } from './cookies.js';
import { createDashboardGuard } from './dashboard-route.js';
import { loginRoutes } from './login-routes.js';
import { decoyHash } from './passwords.js';
import { FLOW_MS } from './oidc-flow.js';
import { oidcRoutes } from './oidc-routes.js';
import { contentSecurityPolicy, setSecurityHeaders } from './security-headers.js';
import { createSessions } from './sessions.js';
import { createAttemptThrottle } from './throttle.js';

export interface DashboardAuthDeps {
  readonly config: Config;
  /** Users and sessions: this instance's SQLite file, or PostgreSQL shared by the replicas. */
  readonly identity: IdentityStore;
  /**
   * Seals the TOTP secrets: opened by the composition root (wiring/dashboard.ts) and checked there against
   * what the identity store holds, since a wrong key would lock out every two-factor user.
   */
  readonly box: SecretBox;
  readonly now: () => number;
  /** The coordination's throttle counters (coordination.ts): in this process, the workers' shared memory, or Redis. */
  readonly throttles: ThrottlePort;
  /** store/catalog.ts reload: a user's change (deletion, roles) changes what their keys reach. */
  readonly reloadCredentials: () => void;
}

export interface DashboardAuth {
  /** Wraps an operator page in the session guard. */
  dashboardRoute(page: PageDef): RouteDef;
  /** Sign-in, second factor, sign-out, account page, `/auth/{provider}` and its callback. */
  readonly routes: RouteDef[];
}

/**
 * Failed passwords: 10 per account and 50 per address in 15 minutes. Failed second factors: 5 per account
 * and 20 per address in 5 minutes (at most 60 guesses an hour at a 6-digit code).
 */
const PASSWORD_FAILURES = { account: 10, address: 50, windowMs: 15 * 60_000 };
const SECOND_FACTOR_FAILURES = { account: 5, address: 20, windowMs: 5 * 60_000 };
/**
 * Unauthenticated `GET /auth/{provider}` (issue 31): each stores a flow row for 10 minutes. 30 per address
 * and 3,000 in all per 10 minutes bound the rows to what sign-in needs; the overall ceiling only refuses
 * the provider button (passwords still work) while many addresses flood it.
 */
const OIDC_STARTS = { address: 30, overall: 3000, windowMs: FLOW_MS };

/** Async: with PostgreSQL the shared secret key is checked against the sealed secrets stored there before the gateway serves. */
export async function createDashboardAuth(d: DashboardAuthDeps): Promise<DashboardAuth> {
  const { config, box, now } = d;
  const publicUrl = config.dashboard.public_url ? new URL(config.dashboard.public_url) : null;
  const publicOrigin = publicUrl?.origin ?? null;
  const secure = config.server.production || config.server.tls !== undefined || publicUrl?.protocol === 'https:';
  const cookies = cookieNames(secure);
  const providers = config.dashboard.oidc_providers;
  const csp = contentSecurityPolicy([...new Set(providers.map((p) => new URL(p.issuer).origin))]);
  // The decoy hash is made now, not at the first unknown e-mail, which would then answer slower than a wrong password.
  void decoyHash();
  const { users, sessions: sessionsRepo } = d.identity;
  const sessions = createSessions(sessionsRepo, now);
  const guard = createDashboardGuard({ sessions, cookies, csp, publicOrigin });
  const scheme = config.server.tls !== undefined ? 'https' : 'http';
  const deps: AuthDeps = {
    users,
    sessions,
    sessionsRepo,
    guard,
    cookies,
    csp,
    box,
    now,
    throttles: {
      password: createAttemptThrottle(d.throttles, 'signin-password', PASSWORD_FAILURES, now),
      secondFactor: createAttemptThrottle(d.throttles, 'signin-totp', SECOND_FACTOR_FAILURES, now),
      oidcStart: createAttemptThrottle(d.throttles, 'oidc-start', OIDC_STARTS, now),
    },
    providers,
    publicOrigin,
    originOf: (ctx: RouteContext) => publicOrigin ?? `${forwardedProto(ctx, config.server.trust_proxy) ?? scheme}://${ctx.req.header('host') ?? 'localhost'}`,
    reloadCredentials: d.reloadCredentials,
  };
  return {
    dashboardRoute: guard.dashboardRoute,
    routes: [...loginRoutes(deps), ...accountRoutes(deps), ...oidcRoutes(deps)].map((r) => withSecurityHeaders(r, csp)),
  };
}

/**
 * Every sign-in, account and /auth answer carries the security headers, its refusals (a 403 CSRF, a 413)
 * too, set before the handler runs; the pages' own calls then find them set (each is sent once).
 */
function withSecurityHeaders(route: RouteDef, csp: string): RouteDef {
  return {
    ...route,
    handle(ctx, auth) {
      setSecurityHeaders(ctx.reply, csp);
      return route.handle(ctx, auth);
    },
  };
}

function forwardedProto(ctx: RouteContext, trustProxy: boolean): string | null {
  if (!trustProxy) return null;
  const proto = ctx.req.header('x-forwarded-proto')?.split(',')[0]?.trim();
  return proto === 'https' || proto === 'http' ? proto : null;
}
