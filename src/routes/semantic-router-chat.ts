/**
 * POST /{project}/_semantic/router/v1/chat/completions and its workspace-pinned twin
 * /{project}/{workspace_id}/_semantic/router/v1/chat/completions: the same bodies as the direct route; the
 * router picks the endpoint (SPEC "Semantic router behaviour"; app/chat/route-chat-turn.ts), then the turn
 * runs through the very same code as a direct request (app/chat/chat-turn.ts). X-Service-Routed-Model and X-Service-Routed-Endpoint are set
 * before the turn starts, so they are in the head of every dispatched response, streamed or not.
 * The workspace resolution (`routerWorkspace`) is shared with the other routes of the router base URL
 * (models.ts, embeddings.ts), which make it a complete OpenAI base URL (issue 21).
 */
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import type { RouteDef, RouteContext } from '../http/server.js';
import { routerWorkspaceOf, type RouterChatServices, type RouterWorkspace } from '../app/chat/router-chat-services.js';
import { serveChatTurn } from '../app/chat/chat-turn.js';
import { routeChatTurn } from '../app/chat/route-chat-turn.js';
import { parseChatBody } from './chat-body.js';
import { keyed, namedWorkspace } from './guard.js';
import type { Services } from '../app/services.js';

/**
 * The workspace every request on a router base URL runs in (chat, models, embeddings), so that a listing
 * or an embedding made with the same URL, key and headers as a turn sees the turn's workspace.
 */
export function routerWorkspace(ctx: RouteContext, services: Services, auth: AuthenticatedKey): RouterWorkspace {
  return routerWorkspaceOf(services, auth, namedWorkspace(ctx.req));
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
