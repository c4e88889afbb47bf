/**
 * POST /{project}/{endpoint}/v1/chat/completions: authenticate, validate at the edge (everything SPEC
 * refuses is refused here, before the upstream sees anything), then hand one turn to the dispatcher.
 * POST /{project}/v1/chat/completions: the same turn on the endpoint the body's `model` names (issue 20),
 * so one client with base URL /{project}/v1 reaches every listed model; the body is read first because it
 * holds the name. The turn itself (shared with the semantic-router routes) is in chat-turn.ts.
 */
import type { EndpointRecord } from '../core/records.js';
import { GatewayError } from '../errors.js';
import type { RouteDef } from '../http/server.js';
import type { ChatServices } from '../app/chat/chat-dispatch.js';
import { serveChatTurn } from '../app/chat/chat-turn.js';
import { parseChatBody } from './chat-body.js';
import { requireBudget } from '../app/endpoint-access.js';
import { keyed, requireEndpoint, requireModel, wrongEndpointKind } from './guard.js';

export function assertServesChat(endpoint: EndpointRecord): void {
  if (endpoint.kind !== 'chat') {
    throw wrongEndpointKind(endpoint, 'chat completions need a chat endpoint');
  }
  if (endpoint.status !== 'active') {
    throw new GatewayError('endpoint_unavailable', { message: `Endpoint ${endpoint.slug} is ${endpoint.status}, not active.` });
  }
}

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
        const { endpoint, workspaceId } = access;
        assertServesChat(endpoint);
        requireBudget(ctx, services, auth, access);
        const body = await parseChatBody(req);
        await serveChatTurn(services, { ctx, auth, endpoint, workspaceId, ...body, route: 'chat' });
      },
    }),
    keyed(services, 'inference', {
      method: 'POST',
      pattern: '/:project/v1/chat/completions',
      family: 'chat',
      idPrefix: 'chatcmpl-',
      handle: async (ctx, auth) => {
        const { req } = ctx;
        const body = await parseChatBody(req);
        const access = requireModel(req, services, auth, { model: body.chat.model, kind: 'chat', route: '/v1/chat/completions' });
        const { endpoint, workspaceId } = access;
        assertServesChat(endpoint);
        requireBudget(ctx, services, auth, access);
        await serveChatTurn(services, { ctx, auth, endpoint, workspaceId, ...body, route: 'chat' });
      },
    }),
  ];
}
