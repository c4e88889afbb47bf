/**
 * POST /{project}/{endpoint}/v1/embeddings on embedding endpoints, and the same body on the router base
 * URLs (/{project}/_semantic/router/v1/embeddings and its workspace-pinned twin), which go to the project's
 * embedding endpoint (core/embeddings/embedding-target.ts), and on the project base URL
 * (/{project}/v1/embeddings), which goes to the endpoint the body's `model` names (issue 20,
 * core/models/resolve-model.ts). Admission is chat's: key (inference scope and the request limiters),
 * endpoint, kind and status, budget; then the body is validated at the edge, and one upstream call carries
 * the client's bytes with only `model` replaced. One usage row per call (route `embeddings`, prompt tokens
 * only), so token limits and budgets count embeddings too.
 */
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import { clientEmbeddings } from '../core/embeddings/embedding-response.js';
import { embeddingTarget } from '../core/embeddings/embedding-target.js';
import type { EndpointRecord } from '../core/records.js';
import { GatewayError } from '../errors.js';
import { parseJsonBody } from '../http/request.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { parseEmbeddingsRequest, type EmbeddingsRequest } from '../schemas/embeddings.js';
import type { ChatServices } from '../app/chat/chat-dispatch.js';
import { servePromptOnly } from '../app/prompt-only/prompt-only-call.js';
import { requireBudget, type EndpointAccess } from '../app/endpoint-access.js';
import { keyed, requireEndpoint, requireModel, wrongEndpointKind } from './guard.js';
import { routerWorkspace } from './semantic-router-chat.js';

/** Usage ledger label of every embeddings call, direct or through a router base URL (not a routed turn). */
const ROUTE = 'embeddings';

export function assertServesEmbeddings(endpoint: EndpointRecord): void {
  if (endpoint.kind !== 'embedding') {
    throw wrongEndpointKind(endpoint, '/v1/embeddings needs an embedding endpoint');
  }
  if (endpoint.status !== 'active') {
    throw new GatewayError('endpoint_unavailable', { message: `Endpoint ${endpoint.slug} is ${endpoint.status}, not active.` });
  }
}

interface EmbeddingsBody {
  readonly raw: Buffer;
  readonly parsed: Record<string, unknown>;
  readonly request: EmbeddingsRequest;
}

async function readBody(ctx: RouteContext): Promise<EmbeddingsBody> {
  const raw = await ctx.req.body();
  const parsed = parseJsonBody(raw);
  const request = parseEmbeddingsRequest(parsed);
  // The schema accepted a JSON object.
  return { raw, parsed: parsed as Record<string, unknown>, request };
}

/** The direct route: the endpoint named by slug. */
async function direct(services: ChatServices, ctx: RouteContext, auth: AuthenticatedKey): Promise<void> {
  const access = requireEndpoint(ctx.req, services, auth);
  assertServesEmbeddings(access.endpoint);
  requireBudget(ctx, services, auth, access);
  await serveEmbeddings(services, ctx, auth, access, await readBody(ctx));
}

/** The project base URL: the body is read first, since its `model` names the endpoint. */
async function byModel(services: ChatServices, ctx: RouteContext, auth: AuthenticatedKey): Promise<void> {
  const body = await readBody(ctx);
  const access = requireModel(ctx.req, services, auth, { model: body.request.model, kind: 'embedding', route: '/v1/embeddings' });
  assertServesEmbeddings(access.endpoint);
  requireBudget(ctx, services, auth, access);
  await serveEmbeddings(services, ctx, auth, access, body);
}

/**
 * The router base URL: the workspace resolved as for a routed turn, then the embedding endpoint within
 * the key's reach. Its slug and model are reported as on routed turns (X-Service-Routed-*), since no
 * path segment told the client which endpoint would answer.
 */
async function routerBase(services: ChatServices, ctx: RouteContext, auth: AuthenticatedKey): Promise<void> {
  const scope = routerWorkspace(ctx, services, auth);
  const access = embeddingTarget(auth.project.id, services.catalog.endpoints(auth.project.id), {
    workspaceId: scope.workspaceId,
    confined: scope.confined,
    keyEndpointId: auth.key.endpointId,
  });
  ctx.req.log.endpoint = access.endpoint.slug;
  requireBudget(ctx, services, auth, access);
  const body = await readBody(ctx);
  ctx.reply.setHeader('X-Service-Routed-Model', access.endpoint.model.id);
  ctx.reply.setHeader('X-Service-Routed-Endpoint', access.endpoint.slug);
  await serveEmbeddings(services, ctx, auth, access, body);
}

/** One upstream call (prompt-only-call.ts). */
function serveEmbeddings(services: ChatServices, ctx: RouteContext, auth: AuthenticatedKey, access: EndpointAccess, body: EmbeddingsBody): Promise<void> {
  return servePromptOnly(services, ctx, auth, access, {
    path: '/embeddings',
    route: ROUTE,
    raw: body.raw,
    parsed: body.parsed,
    answer: (raw) => clientEmbeddings(raw, body.request.model, body.request.input),
  });
}

export function embeddingsRoutes(services: ChatServices): RouteDef[] {
  const family = 'embeddings';
  return [
    keyed(services, 'inference', { method: 'POST', pattern: '/:project/:endpoint/v1/embeddings', family, handle: (ctx, auth) => direct(services, ctx, auth) }),
    keyed(services, 'inference', { method: 'POST', pattern: '/:project/v1/embeddings', family, handle: (ctx, auth) => byModel(services, ctx, auth) }),
    keyed(services, 'inference', { method: 'POST', pattern: '/:project/_semantic/router/v1/embeddings', family, handle: (ctx, auth) => routerBase(services, ctx, auth) }),
    keyed(services, 'inference', { method: 'POST', pattern: '/:project/:workspace/_semantic/router/v1/embeddings', family, handle: (ctx, auth) => routerBase(services, ctx, auth) }),
  ];
}
