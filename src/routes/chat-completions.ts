/**
 * POST /{project}/{endpoint}/v1/chat/completions: authenticate, validate at the edge (everything SPEC
 * refuses is refused here, before the upstream sees anything), then hand one turn to the dispatcher.
 * POST /{project}/v1/chat/completions: the same turn on the endpoint the body's `model` names (issue 20),
 * so one client with base URL /{project}/v1 reaches every listed model; the body is read first because it
 * holds the name. The use case (shared with batch lines and the playground) is app/chat/chat-completion.ts.
 */
import type { RouteDef } from '../http/server.js';
import type { ChatServices } from '../app/chat/chat-dispatch.js';
import { serveChatTurn } from '../app/chat/chat-turn.js';
import { admitChat, serveChatByModel } from '../app/chat/chat-completion.js';
import { parseChatBody } from './chat-body.js';
import { keyed, namedWorkspace, requireEndpoint } from './guard.js';

export function chatCompletionsRoutes(services: ChatServices): RouteDef[] {
  return [
    keyed(services, 'inference', {
      method: 'POST',
      pattern: '/:project/:endpoint/v1/chat/completions',
      family: 'chat',
      idPrefix: 'chatcmpl-',
      handle: async (ctx, auth) => {
        const { req } = ctx;
        const access = requireEndpoint(req, services, auth);
        admitChat(services, ctx, auth, access);
        const body = await parseChatBody(req);
        await serveChatTurn(services, { ctx, auth, endpoint: access.endpoint, workspaceId: access.workspaceId, ...body, route: 'chat' });
      },
    }),
    keyed(services, 'inference', {
      method: 'POST',
      pattern: '/:project/v1/chat/completions',
      family: 'chat',
      idPrefix: 'chatcmpl-',
      handle: async (ctx, auth) => serveChatByModel(services, ctx, auth, await parseChatBody(ctx.req), namedWorkspace(ctx.req)),
    }),
  ];
}
