/**
 * POST /{project}/_semantic/router/v1/chat/completions and its workspace-pinned twin
 * /{project}/{workspace_id}/_semantic/router/v1/chat/completions: the same bodies as the direct route; the
 * router picks the endpoint (SPEC "Semantic router behaviour"), then the turn runs through the very same
 * code as a direct request (chat-turn.ts). X-Service-Routed-Model and X-Service-Routed-Endpoint are set
 * before the turn starts, so they are in the head of every dispatched response, streamed or not.
 * The workspace resolution (`routerWorkspace`) is shared with the other routes of the router base URL
 * (models.ts, embeddings.ts), which make it a complete OpenAI base URL (issue 21).
 */
import { resolveWorkspace, type AuthenticatedKey } from '../core/auth/authenticate.js';
import type { EndpointRecord } from '../core/records.js';
import { requestedSlo } from '../core/routing/latency-window.js';
import { queryPreview } from '../core/routing/query.js';
import type { RouteDef, RouteContext } from '../http/server.js';
import { clientModeOf, decisionRecord } from '../router/decision-row.js';
import type { ChatRequest } from '../schemas/chat-request.js';
import type { RouterChatServices, RouterWorkspace } from '../app/chat/router-chat-services.js';
import { serveChatTurn } from '../app/chat/chat-turn.js';
import { parseChatBody } from './chat-body.js';
import { requireBudget } from '../app/endpoint-access.js';
import { keyed, namedWorkspace } from './guard.js';
import type { Services } from '../app/services.js';

/**
 * The workspace every request on a router base URL runs in (chat, models, embeddings), so that a listing
 * or an embedding made with the same URL, key and headers as a turn sees the turn's workspace.
 */
export function routerWorkspace(ctx: RouteContext, services: Services, auth: AuthenticatedKey): RouterWorkspace {
  const { named, namedBy } = namedWorkspace(ctx.req);
  const workspaceId = resolveWorkspace(auth.key, auth.project, { named, namedBy, workspaces: services.catalog.workspaces(auth.project.id) });
  return { workspaceId, namedBy, confined: named !== null || auth.key.allowedWorkspaceIds !== null };
}

/**
 * The router's choice for one parsed turn: route, budget, the routed headers and the decision row. Shared
 * with the Responses API's semantic route (responses.ts), which routes the chat turn it translates to.
 */
export async function routeChatTurn(services: RouterChatServices, ctx: RouteContext, auth: AuthenticatedKey, workspace: RouterWorkspace, chat: ChatRequest): Promise<EndpointRecord> {
  const { req, reply } = ctx;
  const { workspaceId, namedBy } = workspace;
  const started = performance.now();
  const { endpoint, decision } = await services.router.route({
    projectId: auth.project.id,
    workspaceId,
    keyEndpointId: auth.key.endpointId,
    chat,
    // SPEC: the affinity key, on router routes only (direct routes never read it).
    conversationId: req.header('x-conversation-id'),
    onAbort: (listener) => req.onAbort(listener),
    requestId: req.requestId,
    slo: requestedSlo(req.header('x-slo-ttft-ms'), req.header('x-slo-tpot-ms')),
  });
  const routeTimeMs = performance.now() - started;
  req.log.endpoint = endpoint.slug;
  // A budget refusal is not a dispatched turn: no routed headers, no decision row.
  requireBudget(ctx, services, auth, { endpoint, workspaceId });
  reply.setHeader('X-Service-Routed-Model', endpoint.model.id);
  reply.setHeader('X-Service-Routed-Endpoint', endpoint.slug);
  services.decisionLog.record(
    decisionRecord(
      {
        requestId: req.requestId,
        projectId: auth.project.id,
        workspaceId,
        createdAt: services.now(),
        preview: queryPreview(chat.messages),
        routerId: services.routerId,
        clientMode: clientModeOf(req.surface, namedBy),
        userAgent: req.header('user-agent') ?? null,
        clientIp: req.clientIp,
        routeTimeMs,
      },
      decision,
      endpoint,
    ),
  );
  return endpoint;
}

async function routedTurn(services: RouterChatServices, ctx: RouteContext, auth: AuthenticatedKey): Promise<void> {
  const workspace = routerWorkspace(ctx, services, auth);
  const body = await parseChatBody(ctx.req);
  const endpoint = await routeChatTurn(services, ctx, auth, workspace, body.chat);
  await serveChatTurn(services, { ctx, auth, endpoint, workspaceId: workspace.workspaceId, ...body, route: 'router' });
}

export function semanticRouterChatRoutes(services: RouterChatServices): RouteDef[] {
  const handle = (ctx: RouteContext, auth: AuthenticatedKey): Promise<void> => routedTurn(services, ctx, auth);
  return [
    keyed(services, 'inference', { method: 'POST', pattern: '/:project/_semantic/router/v1/chat/completions', family: 'router', idPrefix: 'chatcmpl-', handle }),
    keyed(services, 'inference', { method: 'POST', pattern: '/:project/:workspace/_semantic/router/v1/chat/completions', family: 'router', idPrefix: 'chatcmpl-', handle }),
  ];
}
