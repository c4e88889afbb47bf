/**
 * The authentication and limits steps of every keyed route: SPEC Authentication 1-10 and Limits applied to
 * an incoming request, with the decisions themselves in core/auth and core/limits.
 */
import type { Scope } from '../config.js';
import { authenticateKey, authorizeEndpoint, missedKeyHash, resolveWorkspace, type AuthenticatedKey } from '../core/auth/authenticate.js';
import { limitClassOf } from '../core/limits/rate-limiter.js';
import type { EndpointRecord } from '../core/records.js';
import { GatewayError } from '../errors.js';
import type { IncomingRequest } from '../http/request.js';
import type { RouteAuth, RouteContext, RouteDef } from '../http/server.js';
import { endpointAccess, modelAccess, type EndpointAccess, type ModelWanted } from '../app/endpoint-access.js';

export { wrongEndpointKind } from '../app/endpoint-access.js';
import { admitKey } from '../app/key-admission.js';
import type { Services } from '../app/services.js';

/** SPEC Limits: management request bodies (RouteDef.bodyLimit of control-plane routes). */
export const MANAGEMENT_BODY_LIMIT = 16 * 1024;

/**
 * Every keyed route starts here: the key (401/403, SPEC Authentication 1-9), then the rate limiters of the
 * route's class (SPEC Limits). From this point on every response, success or error, carries the
 * RateLimit headers; a refused request gets 429 and consumes nothing. Requests refused by authentication
 * neither count nor see the headers (docs/decisions.md).
 *
 * Routes declare it (`keyed` below) and the server runs it before their handler; the few that call it
 * themselves say why at the call. A Promise comes back only from an asynchronous admission port (shared
 * limits): the embedded limiter answers at once and this stays synchronous, with no microtask added.
 */
export function requireKey(ctx: RouteContext, services: Services, scope: Scope): AuthenticatedKey | Promise<AuthenticatedKey> {
  try {
    return authenticateAndAdmit(ctx, services, scope);
  } catch (err) {
    // A key another replica created a moment ago may not be in this replica's snapshot yet: asked of the
    // store once before the 401, so a client that creates a key and uses it at once is served anywhere.
    const { catalog } = services;
    if (!(err instanceof GatewayError) || err.code !== 'invalid_api_key' || !catalog.lookupMissed) throw err;
    const hash = missedKeyHash(ctx.req.header('authorization'), catalog);
    if (hash === null) throw err;
    return catalog.lookupMissed(hash).then((found) => {
      if (!found) throw err;
      return authenticateAndAdmit(ctx, services, scope);
    });
  }
}

function authenticateAndAdmit(ctx: RouteContext, services: Services, scope: Scope): AuthenticatedKey | Promise<AuthenticatedKey> {
  const { req, route } = ctx;
  const now = services.now();
  const auth = authenticateKey(
    {
      authorization: req.header('authorization'),
      // Not a getter: an object literal with an accessor closure gets a hidden class of its own, which
      // kept every request's objects reachable from old space and had them promoted (5-7 ms scavenges).
      clientIp: () => req.clientIp,
      projectRef: req.params.project ?? '',
      scope,
      now,
    },
    services.catalog,
    services.catalog.project,
  );
  req.log.project = auth.project.id;
  req.log.keyId = auth.key.id;
  return admitKey(services, ctx.reply, auth, limitClassOf(route.family, route.method, route.pattern), now);
}

/** The declaration of a route that needs an API key with `scope`: the server runs `requireKey` for it. */
export function keyAuth(services: Services, scope: Scope): RouteAuth<AuthenticatedKey> {
  return { kind: 'key', scope, authenticate: (ctx) => requireKey(ctx, services, scope) };
}

/** A keyed route: its handler receives the authenticated key the server's run of `requireKey` produced. */
export function keyed(services: Services, scope: Scope, route: Omit<RouteDef<AuthenticatedKey>, 'auth'>): RouteDef<AuthenticatedKey> {
  return { ...route, auth: keyAuth(services, scope) };
}

/** The workspace a request names: `ws_` path segment, then X-Workspace-Id, then X-Service-Workspace. */
export function namedWorkspace(req: IncomingRequest): { named: string | null; namedBy: string } {
  if (req.params.workspace !== undefined) return { named: req.params.workspace, namedBy: 'workspace_id' };
  const header = req.header('x-workspace-id');
  if (header !== undefined) return { named: header.trim(), namedBy: 'X-Workspace-Id' };
  const mcp = req.header('x-service-workspace');
  if (mcp !== undefined) return { named: mcp.trim(), namedBy: 'X-Service-Workspace' };
  return { named: null, namedBy: '' };
}

/**
 * The base URLs a client may create Responses on (routes/responses.ts), and so must find its stored
 * responses and conversations on: an SDK client keeps one base URL for create, retrieve and the rest.
 */
export const RESPONSES_BASES: readonly string[] = ['/:project/v1', '/:project/:endpoint/v1', '/:project/_semantic/router/v1'];

/**
 * Records reached by id under an endpoint base URL: the path's endpoint must be one this key may use, as
 * on create there (404 endpoint_not_found, 403 endpoint_restricted), whatever its kind or status, since
 * nothing is sent to it. What the record itself needs (project, workspace reach) is the route's check.
 */
export function checkBaseEndpoint(req: IncomingRequest, services: Services, auth: AuthenticatedKey): void {
  const slug = req.params.endpoint;
  if (slug === undefined) return;
  const endpoint = services.catalog.endpoint(auth.project.id, slug);
  if (!endpoint) throw new GatewayError('endpoint_not_found', { message: `Project ${auth.project.id} has no endpoint ${JSON.stringify(slug)}.` });
  req.log.endpoint = endpoint.slug;
  authorizeEndpoint(auth.key, endpoint);
}

/** Direct routes: the endpoint named by slug, reachable by this key in the request's workspace. */
export function requireEndpoint(req: IncomingRequest, services: Services, auth: AuthenticatedKey): EndpointAccess {
  return endpointAccess(services, auth, req.params.endpoint ?? '', namedWorkspace(req), req.log);
}

/**
 * Model-addressed routes (`/{project}/v1/...`): the endpoint the body's `model` names, among those this key
 * reaches in the request's workspace (app/endpoint-access.ts modelAccess).
 */
export function requireModel(req: IncomingRequest, services: Services, auth: AuthenticatedKey, wanted: ModelWanted): EndpointAccess {
  const access = modelAccess(services, auth, wanted, namedWorkspace(req));
  req.log.endpoint = access.endpoint.slug;
  return access;
}

/**
 * Listing routes: the endpoints this key can reach. A named workspace narrows to it; a confined key sees
 * its own workspaces; an endpoint-restricted key sees its one endpoint.
 */
export function reachableEndpoints(req: IncomingRequest, services: Services, auth: AuthenticatedKey): EndpointRecord[] {
  const { key, project } = auth;
  const workspaces = services.catalog.workspaces(project.id);
  const choice = namedWorkspace(req);
  let reach: readonly string[] | null = null;
  if (choice.named !== null) reach = [resolveWorkspace(key, project, { named: choice.named, namedBy: choice.namedBy, workspaces, workspaceProject: services.catalog.workspaceProject }) ?? ''];
  else if (key.allowedWorkspaceIds) reach = key.allowedWorkspaceIds.filter((w) => workspaces.has(w));
  return services.catalog
    .endpoints(project.id)
    .filter((e) => key.endpointId === null || e.id === key.endpointId)
    .filter((e) => reach === null || e.workspaceIds.some((w) => reach.includes(w)));
}
