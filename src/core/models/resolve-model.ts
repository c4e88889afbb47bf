/**
 * Model-addressed routes (`/{project}/v1/chat/completions`, `/v1/embeddings`, `/v1/audio/*`; issue 20):
 * the body's `model` picks the endpoint, so one client whose base URL is `/{project}/v1` can call every
 * model `GET /{project}/v1/models` lists. SPEC "What the service does" 2 (the body's model is informational)
 * still holds on direct `/{project}/{endpoint}/...` routes; this module is never used there.
 *
 * A name is looked up as, in order: a model id (`model.id`, what the listing shows), a project alias
 * (the Models API, store/model-aliases-repo.ts), an endpoint slug. The first kind of name that matches decides the
 * candidates; a listed id therefore always resolves and is never shadowed by a slug.
 *
 * Several endpoints may serve one model id (other workspaces, a suspended twin). The choice is
 * deterministic, best first: right kind for the route, reachable by this key in this request (the direct
 * route's own checks, so a key reaches by model exactly what it reaches by slug), active, serving the
 * workspace the request runs in without an endpoint (the project default for an unconfined key), earliest
 * created, then slug. When the best candidate is refused, its refusal is the answer: the 403 (or 400/404
 * for a bad named workspace) the direct route gives for that endpoint. Pure: records in, record or
 * GatewayError out.
 */
import type { EndpointConfig } from '../../config.js';
import { GatewayError } from '../../errors.js';
import { authorizeEndpoint, resolveWorkspace, type AuthenticatedKey } from '../auth/authenticate.js';
import type { EndpointRecord, WorkspaceRecord } from '../records.js';

export type EndpointKind = EndpointConfig['kind'];

/**
 * Project aliases (the Models API): a name that stands for a model id. The alias then
 * resolves exactly as the model id would, reach and ranking included.
 */
export interface ModelAliases {
  modelIdOf(projectId: string, alias: string): string | null;
}

export const NO_ALIASES: ModelAliases = { modelIdOf: () => null };

export interface ModelRequest {
  /** The body's `model` (the `model` form field on multipart routes). */
  readonly model: string;
  /** The endpoint kind the route serves. */
  readonly kind: EndpointKind;
  /** The public path after `/{project}`, for messages: `/v1/chat/completions`. */
  readonly route: string;
  /** The workspace the request names (guard.ts namedWorkspace). */
  readonly named: string | null;
  readonly namedBy: string;
}

export interface ModelCatalog {
  /** The project's live endpoints. */
  readonly endpoints: readonly EndpointRecord[];
  readonly workspaces: ReadonlyMap<string, WorkspaceRecord>;
  readonly workspaceProject?: (workspaceId: string) => string | null;
  readonly aliases: ModelAliases;
}

export interface ResolvedModel {
  readonly endpoint: EndpointRecord;
  /** As on direct routes: null means the request runs project-wide. */
  readonly workspaceId: string | null;
}

interface Candidate {
  readonly endpoint: EndpointRecord;
  readonly workspaceId: string | null;
  /** Why the direct route would refuse this key on this endpoint, or null when it would not. */
  readonly refusal: GatewayError | null;
}

/** The endpoints a name stands for: by model id, else by alias, else by slug. Empty: no such model. */
export function endpointsNamed(model: string, projectId: string, catalog: ModelCatalog): EndpointRecord[] {
  const byId = catalog.endpoints.filter((e) => e.model.id === model);
  if (byId.length > 0) return byId;
  const aliased = catalog.aliases.modelIdOf(projectId, model);
  if (aliased !== null) return catalog.endpoints.filter((e) => e.model.id === aliased);
  return catalog.endpoints.filter((e) => e.slug === model);
}

export function resolveModel(auth: AuthenticatedKey, request: ModelRequest, catalog: ModelCatalog): ResolvedModel {
  const { project } = auth;
  const named = endpointsNamed(request.model, project.id, catalog);
  if (named.length === 0) {
    throw new GatewayError('model_not_found', {
      param: 'model',
      message: `Project ${project.id} serves no model ${JSON.stringify(request.model)}: GET /${project.id}/v1/models lists the models you can call.`,
    });
  }
  const home = homeWorkspace(auth, request, catalog);
  let best: Candidate | null = null;
  for (const endpoint of named) {
    const candidate = assess(auth, request, catalog, endpoint);
    if (best === null || better(candidate, best, request.kind, home)) best = candidate;
  }
  // `named` is not empty, so neither is `best`; the check keeps the compiler honest without a cast.
  if (best === null) throw new GatewayError('internal_error');
  if (best.refusal) throw best.refusal;
  const { endpoint } = best;
  if (endpoint.kind !== request.kind) {
    throw new GatewayError('invalid_request', {
      param: 'model',
      message: `Model ${JSON.stringify(request.model)} is served by ${endpoint.kind} endpoint ${endpoint.slug}; ${request.route} needs ${/^[aeiou]/.test(request.kind) ? 'an' : 'a'} ${request.kind} model.`,
    });
  }
  return { endpoint, workspaceId: best.workspaceId };
}

/** The direct route's reach checks (guard.ts requireEndpoint), as a verdict instead of a throw. */
function assess(auth: AuthenticatedKey, request: ModelRequest, catalog: ModelCatalog, endpoint: EndpointRecord): Candidate {
  try {
    authorizeEndpoint(auth.key, endpoint);
    const workspaceId = resolveWorkspace(auth.key, auth.project, { named: request.named, namedBy: request.namedBy, workspaces: catalog.workspaces, workspaceProject: catalog.workspaceProject, endpoint });
    return { endpoint, workspaceId, refusal: null };
  } catch (err) {
    if (err instanceof GatewayError) return { endpoint, workspaceId: null, refusal: err };
    throw err;
  }
}

/** Where the request runs when no endpoint constrains it; null when that alone is refused. */
function homeWorkspace(auth: AuthenticatedKey, request: ModelRequest, catalog: ModelCatalog): string | null {
  try {
    return resolveWorkspace(auth.key, auth.project, { named: request.named, namedBy: request.namedBy, workspaces: catalog.workspaces, workspaceProject: catalog.workspaceProject });
  } catch (err) {
    if (err instanceof GatewayError) return null;
    throw err;
  }
}

/** The ranking in the header comment; each rule only breaks the ties of the ones before it. */
function better(a: Candidate, b: Candidate, kind: EndpointKind, home: string | null): boolean {
  const ea = a.endpoint;
  const eb = b.endpoint;
  if ((ea.kind === kind) !== (eb.kind === kind)) return ea.kind === kind;
  if ((a.refusal === null) !== (b.refusal === null)) return a.refusal === null;
  if ((ea.status === 'active') !== (eb.status === 'active')) return ea.status === 'active';
  if ((a.workspaceId === home) !== (b.workspaceId === home)) return a.workspaceId === home;
  if (ea.createdAt !== eb.createdAt) return ea.createdAt < eb.createdAt;
  return ea.slug < eb.slug;
}
