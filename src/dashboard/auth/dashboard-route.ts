/**
 * The session guard of every dashboard page (issue 22; SPEC Authentication 14 and 16). A page handler
 * (`PageDef`, pages/page-kit.ts) becomes a RouteDef that:
 * - sends the security headers (security-headers.ts) on every answer;
 * - resolves the session cookie: without a signed-in session a GET page redirects to the sign-in page
 *   (`?next=` brings the user back), any other method answers 401 `session_required`;
 * - on POST, PUT, PATCH and DELETE requires the session's CSRF token, in the `X-CSRF-Token` header or as the
 *   `csrf_token` field of a form body, and a same-origin request (`Origin`, `Sec-Fetch-Site`): otherwise
 *   403 `csrf_token_invalid` before the handler runs, so nothing changes;
 * - hands the handler the signed-in user as a `DashboardPrincipal` (principal.ts).
 */
import { GatewayError } from '../../errors.js';
import type { IncomingRequest } from '../../http/request.js';
import type { RouteContext, RouteDef } from '../../http/server.js';
import type { UserRecord, UserRole } from '../../core/store/identity-store.js';
import { LOGIN_PATH } from '../html.js';
import type { PageDef } from '../pages/page-kit.js';
import type { DashboardPrincipal } from '../principal.js';
import { readCookie, type CookieNames } from './cookies.js';
import { setSecurityHeaders } from './security-headers.js';
import { sameSecret } from './secrets.js';
import type { LiveSession, Sessions } from './sessions.js';

/** Dashboard forms are small (the largest is a routing rule); a page body past this is 413. */
export const DASHBOARD_BODY_LIMIT = 64 * 1024;

export interface DashboardGuardDeps {
  readonly sessions: Sessions;
  readonly cookies: CookieNames;
  readonly csp: string;
  /** `dashboard.public_url`'s origin; null: a write's Origin must name the request's own Host. */
  readonly publicOrigin: string | null;
}

export interface SignedIn {
  readonly session: LiveSession;
  readonly user: UserRecord;
  readonly principal: DashboardPrincipal;
}

export function principalOf(user: UserRecord, roles: readonly UserRole[], csrfToken: string): DashboardPrincipal {
  const byProject = new Map(roles.map((r) => [r.projectId, r]));
  return {
    userId: user.id,
    email: user.email,
    name: user.name,
    csrfToken,
    roleIn: (projectId) => byProject.get(projectId)?.role ?? null,
    projectIds: roles.map((r) => r.projectId),
    workspacesIn: (projectId) => byProject.get(projectId)?.workspaceIds ?? (byProject.has(projectId) ? 'all' : []),
  };
}

/**
 * Printable ASCII only: a `next` goes into a Location header, where CR LF would add headers of the
 * sender's choosing (issue 31: a crafted sign-in link set the attacker's session cookie), and a browser
 * percent-encodes anything else in a path it sends, so a real one never holds a space or a control byte.
 */
const NEXT_CHARS = /^[\x21-\x7e]+$/;

/** A `next` that stays inside the dashboard (never another site: `//evil`, `/\evil`, a scheme, CR LF). */
export function safeNext(next: string | null | undefined): string | null {
  if (!next || next.length > 500 || !NEXT_CHARS.test(next)) return null;
  if (!next.startsWith('/dashboard') || next.startsWith('//') || next.includes('\\')) return null;
  // The browser resolves the path before it goes: it must still be under /dashboard once resolved (dot
  // segments, plain or percent-encoded, and empty segments would lead it elsewhere on this host).
  let resolved: URL;
  try {
    resolved = new URL(next, 'http://dashboard.invalid');
  } catch {
    return null;
  }
  const path = resolved.pathname;
  if (resolved.host !== 'dashboard.invalid' || /%2e/i.test(next) || path.includes('//') || !(path === '/dashboard' || path.startsWith('/dashboard/'))) return null;
  return next;
}

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const FORM = 'application/x-www-form-urlencoded';

export function createDashboardGuard(deps: DashboardGuardDeps) {
  const { sessions, cookies } = deps;

  /** Same origin: an Origin header, when sent, names this server; Sec-Fetch-Site, when sent, says so. */
  function sameOrigin(req: IncomingRequest): boolean {
    const site = req.header('sec-fetch-site');
    if (site !== undefined && site !== 'same-origin') return false;
    const origin = req.header('origin');
    if (origin === undefined) return true;
    if (deps.publicOrigin !== null) return origin === deps.publicOrigin;
    try {
      return new URL(origin).host === req.header('host');
    } catch {
      return false;
    }
  }

  /** The token a write carries: the header, else the field of a form body. */
  async function sentToken(req: IncomingRequest): Promise<string | null> {
    const header = req.header('x-csrf-token');
    if (header !== undefined) return header;
    if (!(req.header('content-type') ?? '').toLowerCase().startsWith(FORM)) return null;
    return new URLSearchParams((await req.body()).toString('utf8')).get('csrf_token');
  }

  /** SPEC Authentication 16; throws 403 csrf_token_invalid. */
  async function requireCsrf(req: IncomingRequest, csrfToken: string): Promise<void> {
    if (!sameOrigin(req)) throw new GatewayError('csrf_token_invalid', { message: 'Dashboard writes must come from the dashboard itself (same origin).' });
    const token = await sentToken(req);
    if (token === null || !sameSecret(token, csrfToken)) {
      throw new GatewayError('csrf_token_invalid', { message: 'Send the X-CSRF-Token header with the value of the page\'s <meta name="csrf-token">.' });
    }
  }

  /** The signed-in user of this request, or null (no cookie, an unknown or expired session, a deleted user). */
  async function signedIn(req: IncomingRequest): Promise<SignedIn | null> {
    const found = await sessions.resolve(readCookie(req.header('cookie'), cookies.session), 'full');
    if (!found) return null;
    const { session, user, roles } = found;
    return { session, user, principal: principalOf(user, roles, session.csrfToken) };
  }

  function redirectToLogin(ctx: RouteContext): void {
    const { req } = ctx;
    const next = req.query ? `${req.path}?${req.query}` : req.path;
    ctx.reply.setHeader('Location', `${LOGIN_PATH}?next=${encodeURIComponent(next)}`);
    ctx.reply.empty(303);
  }

  /** The guard around a handler that needs the session itself (the account page: sessions, sign-out). */
  function sessionRoute(method: RouteDef['method'], pattern: string, handle: (ctx: RouteContext, who: SignedIn) => Promise<void> | void): RouteDef {
    return {
      method,
      pattern,
      family: 'dashboard',
      // Declared; checked below, where a GET without a session is redirected to sign in rather than refused.
      auth: { kind: 'session' },
      bodyLimit: DASHBOARD_BODY_LIMIT,
      async handle(ctx) {
        setSecurityHeaders(ctx.reply, deps.csp);
        const who = await signedIn(ctx.req);
        if (!who) {
          if (method === 'GET') return redirectToLogin(ctx);
          throw new GatewayError('session_required', { message: 'This dashboard action needs a signed-in session: sign in at /dashboard/login.' });
        }
        if (WRITES.has(method)) await requireCsrf(ctx.req, who.session.csrfToken);
        await handle(ctx, who);
      },
    };
  }

  function dashboardRoute(def: PageDef): RouteDef {
    return sessionRoute(def.method, def.pattern, (ctx, who) => def.handle(ctx, who.principal, ctx.req.params));
  }

  return { dashboardRoute, sessionRoute, signedIn, requireCsrf, sameOrigin, redirectToLogin };
}

export type DashboardGuard = ReturnType<typeof createDashboardGuard>;
