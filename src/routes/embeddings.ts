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
import { embeddingTarget } from '../core/embeddings/embedding-target.js';
import { parseJsonBody } from '../http/request.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import type { ChatServices } from '../app/chat/chat-dispatch.js';
import { requireBudget } from '../app/endpoint-access.js';
import { admitEmbeddings, embeddingsBodyFrom, serveEmbeddings, serveEmbeddingsByModel, type EmbeddingsBody } from '../app/prompt-only/embeddings-call.js';
import { keyed, namedWorkspace, requireEndpoint } from './guard.js';
import { routerWorkspace } from './semantic-router-chat.js';


async function readBody(ctx: RouteContext): Promise<EmbeddingsBody> {
  const raw = await ctx.req.body();
  return embeddingsBodyFrom(raw, parseJsonBody(raw));
}

/** The direct route: the endpoint named by slug. */
async function direct(services: ChatServices, ctx: RouteContext, auth: AuthenticatedKey): Promise<void> {
  const access = requireEndpoint(ctx.req, services, auth);
  admitEmbeddings(services, ctx, auth, access);
  await serveEmbeddings(services, ctx, auth, access, await readBody(ctx));
}

/** The project base URL: the body is read first, since its `model` names the endpoint. */
async function byModel(services: ChatServices, ctx: RouteContext, auth: AuthenticatedKey): Promise<void> {
  await serveEmbeddingsByModel(services, ctx, auth, await readBody(ctx), namedWorkspace(ctx.req));
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

export function embeddingsRoutes(services: ChatServices): RouteDef[] {
  const family = 'embeddings';
  return [
    keyed(services, 'inference', { method: 'POST', pattern: '/:project/:endpoint/v1/embeddings', family, handle: (ctx, auth) => direct(services, ctx, auth) }),
    keyed(services, 'inference', { method: 'POST', pattern: '/:project/v1/embeddings', family, handle: (ctx, auth) => byModel(services, ctx, auth) }),
    keyed(services, 'inference', { method: 'POST', pattern: '/:project/_semantic/router/v1/embeddings', family, handle: (ctx, auth) => routerBase(services, ctx, auth) }),
    keyed(services, 'inference', { method: 'POST', pattern: '/:project/:workspace/_semantic/router/v1/embeddings', family, handle: (ctx, auth) => routerBase(services, ctx, auth) }),
  ];
}
