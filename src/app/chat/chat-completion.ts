/**
 * A chat completion as the API's routes and the gateway's own work (batch lines, the dashboard playground)
 * run it once the key is admitted: the body checked (SPEC "Chat completions"), the endpoint (named by
 * slug, by the body's `model`, or chosen by the router) checked to serve chat, its budget, then the turn
 * (chat-turn.ts). The order of the steps is the order of the refusals a client sees.
 */
import type { AuthenticatedKey } from '../../core/auth/authenticate.js';
import type { EndpointRecord } from '../../core/records.js';
import { GatewayError } from '../../errors.js';
import { parseChatRequest } from '../../schemas/chat-request.js';
import { modelAccess, requireBudget, wrongEndpointKind, type EndpointAccess, type WorkspaceChoice } from '../endpoint-access.js';
import type { TurnExchange } from '../turn-io.js';
import type { ChatServices } from './chat-dispatch.js';
import { serveChatTurn, type ChatBody } from './chat-turn.js';

export function assertServesChat(endpoint: EndpointRecord): void {
  if (endpoint.kind !== 'chat') {
    throw wrongEndpointKind(endpoint, 'chat completions need a chat endpoint');
  }
  if (endpoint.status !== 'active') {
    throw new GatewayError('endpoint_unavailable', { message: `Endpoint ${endpoint.slug} is ${endpoint.status}, not active.` });
  }
}

/** A request body already read as JSON (`parsed`), validated: 400 before anything else (routing included) looks at it. */
export function chatBodyFrom(raw: Buffer, parsed: unknown): ChatBody {
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new GatewayError('invalid_request', { message: 'The request body must be a JSON object.' });
  }
  const body = parsed as Record<string, unknown>;
  return { raw, parsed: body, chat: parseChatRequest(body) };
}

/** The endpoint a direct request reached serves chat, within its budget (budget warning header on the reply). */
export function admitChat(services: ChatServices, ctx: TurnExchange, auth: AuthenticatedKey, access: EndpointAccess): void {
  assertServesChat(access.endpoint);
  requireBudget(ctx, services, auth, access);
}

/** `/{project}/v1/chat/completions` (issue 20): the endpoint the body's `model` names in the workspace chosen. */
export async function serveChatByModel(services: ChatServices, ctx: TurnExchange, auth: AuthenticatedKey, body: ChatBody, choice: WorkspaceChoice): Promise<void> {
  const access = modelAccess(services, auth, { model: body.chat.model, kind: 'chat', route: '/v1/chat/completions' }, choice);
  ctx.req.log.endpoint = access.endpoint.slug;
  admitChat(services, ctx, auth, access);
  await serveChatTurn(services, { ctx, auth, endpoint: access.endpoint, workspaceId: access.workspaceId, ...body, route: 'chat' });
}
