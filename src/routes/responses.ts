/**
 * The Responses API (issue 14; OpenAI's shapes, so the official SDK works unchanged):
 *   POST /{project}/{endpoint}/v1/responses            endpoint by slug, as chat completions
 *   POST /{project}/v1/responses                       endpoint by the body's `model` (requireModel)
 *   POST /{project}/_semantic/router/v1/responses      endpoint chosen by the semantic router
 *   GET | DELETE /{project}/v1/responses/{id}, POST .../{id}/cancel, GET .../{id}/input_items
 * A request becomes ONE chat turn (core/responses/translate.ts) served by the chat path itself
 * (chat-turn.ts serveChatTurn: validation, capabilities, context window, dispatch, usage ledger); the
 * answer comes back through ResponsesReply, which writes the Response object or its streaming events.
 */
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import type { EndpointRecord } from '../core/records.js';
import { canonicalItems, type Item } from '../core/responses/input-items.js';
import { chatBodyOf, type ResponseHeader } from '../core/responses/translate.js';
import { GatewayError } from '../errors.js';
import { parseJsonBody, type IncomingRequest } from '../http/request.js';
import { newRequestId } from '../http/request-id.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { parseChatRequest } from '../schemas/chat-request.js';
import { parseResponseRequest, type ResponseRequest } from '../schemas/responses-request.js';
import type { ConversationsRepo } from '../store/conversations-repo.js';
import type { ResponsesRepo } from '../store/responses-repo.js';
import { assertServesChat } from './chat-completions.js';
import type { ChatServices } from './chat-dispatch.js';
import { serveChatTurn } from './chat-turn.js';
import { requireBudget, requireEndpoint, requireKey, requireModel, type EndpointAccess } from './guard.js';
import { listPage, parseListQuery, reaches } from './item-list.js';
import { ResponsesReply } from './responses-reply.js';
import { routeChatTurn, routerWorkspace, type RouterChatServices, type RouterWorkspace } from './semantic-router-chat.js';

/** SPEC "Other limits": server-side conversation replay. */
export const CONVERSATION_REPLAY_LIMIT = 2000;

export interface ResponsesServices extends ChatServices {
  readonly responses: ResponsesRepo;
  readonly conversations: ConversationsRepo;
}

type Placement = { readonly kind: 'direct'; readonly access: EndpointAccess } | { readonly kind: 'routed'; readonly workspace: RouterWorkspace };

async function readRequest(req: IncomingRequest): Promise<ResponseRequest> {
  const parsed = parseJsonBody(await req.body());
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new GatewayError('invalid_request', { message: 'The request body must be a JSON object.' });
  return parseResponseRequest(parsed);
}

/** The stored chain before `previous_response_id`, oldest first: each response's input then its output. */
function replayedChain(services: ResponsesServices, auth: AuthenticatedKey, id: string): Item[] {
  const links: Item[][] = [];
  let next: string | null = id;
  while (next !== null) {
    const stored = services.responses.get(auth.project.id, next);
    if (!stored || !reaches(auth, stored.workspaceId)) {
      throw new GatewayError('response_not_found', { param: 'previous_response_id', message: `No stored response ${JSON.stringify(next)} in this project (responses made with store: false are not kept).` });
    }
    links.push([...stored.input, ...((stored.body.output as Item[] | undefined) ?? [])]);
    next = stored.previousResponseId;
  }
  return links.reverse().flat();
}

interface Context {
  readonly items: Item[];
  readonly conversationId: string | null;
}

function contextOf(services: ResponsesServices, auth: AuthenticatedKey, request: ResponseRequest, zdr: boolean): Context {
  const conversation = request.conversation ? (typeof request.conversation === 'string' ? request.conversation : request.conversation.id) : null;
  if (conversation !== null && request.previous_response_id) {
    throw new GatewayError('invalid_request', { param: 'conversation', message: 'conversation and previous_response_id cannot be used together.' });
  }
  if (request.previous_response_id) return { items: replayedChain(services, auth, request.previous_response_id), conversationId: null };
  if (conversation === null) return { items: [], conversationId: null };
  // The new input and output are appended to the conversation: stored data, which ZDR forbids.
  if (zdr) throw new GatewayError('retention_not_permitted', { param: 'conversation', message: 'A conversation stores its items, which a zero-data-retention workspace does not permit.' });
  const found = services.conversations.get(auth.project.id, conversation);
  if (!found || !reaches(auth, found.workspaceId)) throw new GatewayError('conversation_not_found', { param: 'conversation', message: `No conversation ${JSON.stringify(conversation)} in this project.` });
  const count = services.conversations.countItems(found.id);
  if (count > CONVERSATION_REPLAY_LIMIT && request.truncation !== 'auto') {
    throw new GatewayError('context_length_exceeded', {
      param: 'input',
      message: `The conversation holds ${count} items, more than the ${CONVERSATION_REPLAY_LIMIT} a response replays; send truncation: "auto" to use the most recent ${CONVERSATION_REPLAY_LIMIT}, or branch.`,
    });
  }
  return { items: services.conversations.contextItems(found.id, count > CONVERSATION_REPLAY_LIMIT ? CONVERSATION_REPLAY_LIMIT : null), conversationId: found.id };
}

async function createResponse(services: ResponsesServices & RouterChatServices, ctx: RouteContext, how: 'slug' | 'model' | 'router'): Promise<void> {
  const { req } = ctx;
  const auth = requireKey(ctx, services, 'inference');
  let placement: Placement | null = how === 'slug' ? { kind: 'direct', access: requireEndpoint(req, services, auth) } : null;
  const request = await readRequest(req);
  if (how === 'model') placement = { kind: 'direct', access: requireModel(req, services, auth, { model: request.model, kind: 'chat', route: '/v1/responses' }) };
  if (how === 'router') placement = { kind: 'routed', workspace: routerWorkspace(ctx, services, auth) };
  if (!placement) throw new Error('unreachable: every route names how its endpoint is found');
  if (placement.kind === 'direct') {
    assertServesChat(placement.access.endpoint);
    requireBudget(ctx, services, auth, placement.access);
  }
  const workspaceId = placement.kind === 'direct' ? placement.access.workspaceId : placement.workspace.workspaceId;
  if (request.background) throw new GatewayError('unsupported_value', { param: 'background', message: 'background responses are not supported; send the request without background.' });
  const zdr = workspaceId !== null && (services.catalog.workspaces(auth.project.id).get(workspaceId)?.zeroDataRetention ?? false);
  if (zdr && request.store === true) throw new GatewayError('retention_not_permitted', { param: 'store' });
  const context = contextOf(services, auth, request, zdr);
  const input = canonicalItems(request.input ?? [], 'input', newRequestId);
  const chatBody = chatBodyOf(request, context.items, input);
  const chat = parseChatRequest(chatBody);
  let endpoint: EndpointRecord;
  if (placement.kind === 'direct') endpoint = placement.access.endpoint;
  else endpoint = await routeChatTurn(services, ctx, auth, placement.workspace, chat);

  // OpenAI stores by default; a ZDR workspace never does (an explicit true was refused above).
  const store = request.store ?? !zdr;
  const header: ResponseHeader = { id: req.requestId, createdAt: Math.floor(services.now() / 1000), model: request.model, request, store, conversationId: context.conversationId };
  const conversationId = context.conversationId;
  const reply = new ResponsesReply(ctx.reply, header, newRequestId, (state, body) => {
    const failed = state.status === 'failed';
    services.responses.finish({
      projectId: auth.project.id,
      responseId: header.id,
      failed,
      store: store ? { id: header.id, projectId: auth.project.id, workspaceId, previousResponseId: request.previous_response_id ?? null, conversationId, status: state.status, input, body, createdAt: header.createdAt } : null,
      conversation: conversationId !== null && !failed ? { id: conversationId, items: [...input, ...state.output], createdAt: header.createdAt } : null,
    });
  });
  const raw = Buffer.from(JSON.stringify(chatBody));
  try {
    await serveChatTurn(services, { ctx, auth, endpoint, workspaceId, raw, parsed: chatBody, chat, route: how === 'router' ? 'router' : 'chat', reply });
  } finally {
    // Refused before or by the model (the client gets the error envelope), or a stream the client left:
    // no Response reached its end, and subscribers get response.failed.
    if (!reply.finished) services.responses.finish({ projectId: auth.project.id, responseId: header.id, failed: true, store: null, conversation: null });
  }
}

function storedResponse(ctx: RouteContext, services: ResponsesServices, auth: AuthenticatedKey): { id: string; input: Item[]; body: Record<string, unknown> } {
  const id = ctx.req.params.response ?? '';
  const stored = services.responses.get(auth.project.id, id);
  if (!stored || !reaches(auth, stored.workspaceId)) throw new GatewayError('response_not_found', { message: `No stored response ${JSON.stringify(id)} in this project.` });
  return stored;
}

export function responsesRoutes(services: ResponsesServices & RouterChatServices): RouteDef[] {
  const keyed = (handle: (ctx: RouteContext, auth: AuthenticatedKey) => void) => async (ctx: RouteContext) => {
    const auth = requireKey(ctx, services, 'inference');
    await ctx.req.body();
    handle(ctx, auth);
  };
  return [
    { method: 'POST', pattern: '/:project/:endpoint/v1/responses', family: 'responses', idPrefix: 'resp_', handle: (ctx) => createResponse(services, ctx, 'slug') },
    { method: 'POST', pattern: '/:project/v1/responses', family: 'responses', idPrefix: 'resp_', handle: (ctx) => createResponse(services, ctx, 'model') },
    { method: 'POST', pattern: '/:project/_semantic/router/v1/responses', family: 'router', idPrefix: 'resp_', handle: (ctx) => createResponse(services, ctx, 'router') },
    {
      method: 'GET',
      pattern: '/:project/v1/responses/:response',
      family: 'responses',
      handle: keyed((ctx, auth) => ctx.reply.json(200, storedResponse(ctx, services, auth).body)),
    },
    {
      method: 'DELETE',
      pattern: '/:project/v1/responses/:response',
      family: 'responses',
      handle: keyed((ctx, auth) => {
        const { id } = storedResponse(ctx, services, auth);
        services.responses.delete(auth.project.id, id);
        ctx.reply.json(200, { id, object: 'response.deleted', deleted: true });
      }),
    },
    {
      method: 'POST',
      pattern: '/:project/v1/responses/:response/cancel',
      family: 'responses',
      handle: keyed((ctx, auth) => {
        storedResponse(ctx, services, auth);
        // Every response here ran in its request (background is refused): there is never one to cancel.
        throw new GatewayError('invalid_request', { message: 'Only background responses can be cancelled; this response was not created with background.' });
      }),
    },
    {
      method: 'GET',
      pattern: '/:project/v1/responses/:response/input_items',
      family: 'responses',
      handle: keyed((ctx, auth) => {
        const { input } = storedResponse(ctx, services, auth);
        const query = parseListQuery(ctx.req);
        const ordered = query.order === 'asc' ? input : [...input].reverse();
        let start = 0;
        if (query.after !== null) {
          start = ordered.findIndex((item) => item.id === query.after) + 1;
          if (start === 0) throw new GatewayError('invalid_query', { param: 'after', message: `after names no input item of this response: ${JSON.stringify(query.after)}.` });
        }
        const page = ordered.slice(start, start + query.limit);
        ctx.reply.json(200, listPage(page, start + query.limit < ordered.length));
      }),
    },
  ];
}
