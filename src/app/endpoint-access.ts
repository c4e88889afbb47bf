/**
 * The endpoint a token-spending request reaches, once the route resolved it (routes/guard.ts), and the
 * budget step every such request takes before anything reaches a model: shared by the routes and the use
 * cases that pick their endpoint themselves (multimodel steps).
 */
import { authorizeEndpoint, resolveWorkspace, type AuthenticatedKey } from '../core/auth/authenticate.js';
import { budgetError } from '../core/limits/budget-errors.js';
import { NO_ALIASES, resolveModel, type EndpointKind, type ModelAliases } from '../core/models/resolve-model.js';
import type { EndpointRecord } from '../core/records.js';
import { withArticle } from '../core/article.js';
import { GatewayError } from '../errors.js';
import type { Services } from './services.js';
import type { TurnLog, TurnSink } from './turn-io.js';

export interface EndpointAccess {
  readonly endpoint: EndpointRecord;
  /** null: the request runs project-wide (a key with no user and no list, in a project without a default). */
  readonly workspaceId: string | null;
}

/**
 * Token-spending routes, once the endpoint and workspace are known: `X-Service-Budget-Warning` at 80% of
 * a cap, 429 `endpoint_budget_exhausted` / `workspace_budget_exhausted` once one is spent.
 */
export function requireBudget(ctx: { readonly reply: Pick<TurnSink, 'setHeader'> }, services: Services, auth: AuthenticatedKey, access: EndpointAccess): void {
  const verdict = services.budgets.check(auth.project.id, access.endpoint.id, access.workspaceId, services.now());
  if (!verdict) return;
  // SPEC: the warning says "the request was served in full", so a refusal does not carry it.
  if (verdict.exhausted) throw budgetError(verdict.exhausted);
  if (verdict.warning) ctx.reply.setHeader('X-Service-Budget-Warning', verdict.warning);
}

export interface ModelWanted {
  /** The body's `model`. */
  readonly model: string;
  /** The endpoint kind the route serves. */
  readonly kind: EndpointKind;
  /** The public path after `/{project}`, for messages. */
  readonly route: string;
}

/** The workspace a request names, and how (routes/guard.ts namedWorkspace; a batch line keeps its batch's). */
export interface WorkspaceChoice {
  readonly named: string | null;
  readonly namedBy: string;
}

/** The Models API's aliases (store/model-aliases-repo.ts) as the resolver's table. */
function aliasTable(services: Services): ModelAliases {
  const repo = services.modelAliases;
  return repo ? { modelIdOf: (projectId, alias) => repo.get(projectId, alias)?.target ?? null } : NO_ALIASES;
}

/**
 * Model-addressed requests: the endpoint the body's `model` names, among those this key reaches in the
 * named workspace (core/models/resolve-model.ts has the order and the tie-breaks), a project alias (the
 * Models API) standing for its target model id.
 */
export function modelAccess(services: Services, auth: AuthenticatedKey, wanted: ModelWanted, choice: WorkspaceChoice): EndpointAccess {
  const projectId = auth.project.id;
  return resolveModel(
    auth,
    { model: wanted.model, kind: wanted.kind, route: wanted.route, named: choice.named, namedBy: choice.namedBy },
    { endpoints: services.catalog.endpoints(projectId), workspaces: services.catalog.workspaces(projectId), workspaceProject: services.catalog.workspaceProject, aliases: aliasTable(services) },
  );
}

/**
 * 400 for an endpoint of the wrong kind for the route: `Endpoint <slug> is an <kind> endpoint; <what the
 * route needs>.` One sentence shape for every route that serves one kind.
 */
export function wrongEndpointKind(endpoint: EndpointRecord, needs: string, param: string | null = null): GatewayError {
  return new GatewayError('invalid_request', { param, message: `Endpoint ${endpoint.slug} is ${withArticle(endpoint.kind)} endpoint; ${needs}.` });
}

/** Direct requests: the endpoint named by slug, reachable by this key in the named workspace. */
export function endpointAccess(services: Services, auth: AuthenticatedKey, slug: string, choice: WorkspaceChoice, log: TurnLog): EndpointAccess {
  const endpoint = services.catalog.endpoint(auth.project.id, slug);
  if (!endpoint) {
    throw new GatewayError('endpoint_not_found', { message: `Project ${auth.project.id} has no endpoint ${JSON.stringify(slug)}.` });
  }
  log.endpoint = endpoint.slug;
  authorizeEndpoint(auth.key, endpoint);
  const { named, namedBy } = choice;
  // Named fields, not a spread: V8 gave the spread copy a hidden class of its own on every request (a
  // new map per request, read through megamorphic lookups; seen with --log-ic).
  const workspaceId = resolveWorkspace(auth.key, auth.project, { named, namedBy, workspaces: services.catalog.workspaces(auth.project.id), workspaceProject: services.catalog.workspaceProject, endpoint });
  return { endpoint, workspaceId };
}
