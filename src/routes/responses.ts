/**
 * The Responses API (issue 14; OpenAI's shapes, so the official SDK works unchanged):
 *   POST /{project}/{endpoint}/v1/responses            endpoint by slug, as chat completions
 *   POST /{project}/v1/responses                       endpoint by the body's `model` (requireModel)
 *   POST /{project}/_semantic/router/v1/responses      endpoint chosen by the semantic router
 *   GET | DELETE /{project}/v1/responses/{id}, POST .../{id}/cancel, GET .../{id}/input_items (responses-stored.ts)
 * A request becomes ONE chat turn (core/responses/translate.ts) served by the chat path itself
 * (chat-turn.ts serveChatTurn: validation, capabilities, context window, dispatch, usage ledger); the
 * answer comes back through ResponsesReply, which writes the Response object or its streaming events.
 * `background: true` answers at once and runs that same turn in the gateway (app/responses/background-responses.ts); an
 * endpoint whose servers speak the Responses API (`upstream.api: responses`) gets the client's body passed
 * through instead of translated (responses-passthrough.ts).
 */
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import type { EndpointRecord } from '../core/records.js';
import { canonicalItems, type Item } from '../core/responses/input-items.js';
import { asResponsesRefusal, type ResponsesOrigin } from '../core/responses/chat-refusal.js';
import { chatToolsOf } from '../core/responses/tools.js';
import { chatBodyOf, responseObject, type ResponseHeader, type ResponseStatus } from '../core/responses/translate.js';
import { GatewayError } from '../errors.js';
import { parseJsonBody, type IncomingRequest } from '../http/request.js';
import { newRequestId } from '../http/request-id.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { parseChatRequest, type ChatRequest } from '../schemas/chat-request.js';
import { parseResponseRequest, type ResponseRequest } from '../schemas/responses-request.js';
import type { RecoveryCue } from '../core/coordination/recovery-cue.js';
import type { ResponseRecord, StoredConversations, StoredResponses } from '../core/store/responses-store.js';
import { assertServesChat } from '../app/chat/chat-completion.js';
import type { ChatServices } from '../app/chat/chat-dispatch.js';
import { serveChatTurn } from '../app/chat/chat-turn.js';
import { requireBudget, type EndpointAccess } from '../app/endpoint-access.js';
import { keyed, requireEndpoint, requireModel } from './guard.js';
import { reaches } from './item-list.js';
import { createBackgroundResponses, type BackgroundJob, type BackgroundResponses } from '../app/responses/background-responses.js';
import { followRun } from './responses-follow.js';
import { passThroughResponse } from '../app/responses/responses-passthrough.js';
import { ResponsesReply, type FinishResponse } from '../app/responses/responses-reply.js';
import { storedResponseRoutes } from './responses-stored.js';
import type { RouterChatServices, RouterWorkspace } from '../app/chat/router-chat-services.js';
import { routeChatTurn } from '../app/chat/route-chat-turn.js';
import { routerWorkspace } from './semantic-router-chat.js';

/** SPEC "Other limits": server-side conversation replay. */
export const CONVERSATION_REPLAY_LIMIT = 2000;

export interface ResponsesServices extends ChatServices {
  readonly responses: StoredResponses;
  readonly conversations: StoredConversations;
}

type Placement = { readonly kind: 'direct'; readonly access: EndpointAccess } | { readonly kind: 'routed'; readonly workspace: RouterWorkspace };

/** The body as a JSON object (its fields are checked later: strictly, or for passthrough only what the gateway reads). */
async function readBody(req: IncomingRequest): Promise<{ raw: Buffer; parsed: Record<string, unknown> }> {
  const raw = await req.body();
  const parsed = parseJsonBody(raw);
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new GatewayError('invalid_request', { message: 'The request body must be a JSON object.' });
  return { raw, parsed: parsed as Record<string, unknown> };
}

/** The stored chain before `previous_response_id`, oldest first: each response's input then its output. */
async function replayedChain(services: ResponsesServices, auth: AuthenticatedKey, id: string): Promise<Item[]> {
  const links: Item[][] = [];
  let next: string | null = id;
  while (next !== null) {
    const stored = await services.responses.get(auth.project.id, next);
    if (!stored || !reaches(auth, stored.workspaceId)) {
      throw new GatewayError('response_not_found', { param: 'previous_response_id', message: `No stored response ${JSON.stringify(next)} in this project (responses made with store: false are not kept).` });
    }
    if (stored.status === 'queued' || stored.status === 'in_progress') {
      // A background response has no output yet: continuing from it would silently drop its answer.
      throw new GatewayError('invalid_request', { param: 'previous_response_id', message: `Response ${JSON.stringify(next)} is still ${stored.status}; continue from it once it has completed.` });
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

async function contextOf(services: ResponsesServices, auth: AuthenticatedKey, request: ResponseRequest, zdr: boolean): Promise<Context> {
  const conversation = request.conversation ? (typeof request.conversation === 'string' ? request.conversation : request.conversation.id) : null;
  if (conversation !== null && request.previous_response_id) {
    throw new GatewayError('invalid_request', { param: 'conversation', message: 'conversation and previous_response_id cannot be used together.' });
  }
  if (request.previous_response_id) return { items: await replayedChain(services, auth, request.previous_response_id), conversationId: null };
  if (conversation === null) return { items: [], conversationId: null };
  // The new input and output are appended to the conversation: stored data, which ZDR forbids.
  if (zdr) throw new GatewayError('retention_not_permitted', { param: 'conversation', message: 'A conversation stores its items, which a zero-data-retention workspace does not permit.' });
  const found = await services.conversations.get(auth.project.id, conversation);
  if (!found || !reaches(auth, found.workspaceId)) throw new GatewayError('conversation_not_found', { param: 'conversation', message: `No conversation ${JSON.stringify(conversation)} in this project.` });
  const count = await services.conversations.countItems(found.id);
  if (count > CONVERSATION_REPLAY_LIMIT && request.truncation !== 'auto') {
    throw new GatewayError('context_length_exceeded', {
      param: 'input',
      message: `The conversation holds ${count} items, more than the ${CONVERSATION_REPLAY_LIMIT} a response replays; send truncation: "auto" to use the most recent ${CONVERSATION_REPLAY_LIMIT}, or branch.`,
    });
  }
  return { items: await services.conversations.contextItems(found.id, count > CONVERSATION_REPLAY_LIMIT ? CONVERSATION_REPLAY_LIMIT : null), conversationId: found.id };
}

/** True when the endpoint's servers speak the Responses API: the body is passed through, not translated. */
function passesThrough(endpoint: EndpointRecord): boolean {
  return endpoint.upstream.api === 'responses';
}

/**
 * What the gateway itself checks of a passed-through body (the rest is the upstream server's to judge):
 * `stream`, no `background` (the upstream would hold it, out of reach of the gateway's retrieve and
 * cancel), and in a zero-data-retention workspace nothing the gateway could see stored.
 */
function checkPassthrough(parsed: Record<string, unknown>, zdr: boolean): void {
  if (parsed.stream !== undefined && parsed.stream !== null && typeof parsed.stream !== 'boolean') throw new GatewayError('invalid_request', { param: 'stream', message: 'stream must be a boolean.' });
  if (parsed.background === true) {
    throw new GatewayError('unsupported_value', { param: 'background', message: "background is not supported on an endpoint whose server speaks the Responses API (upstream.api: responses): the server would hold the response, out of the gateway's reach." });
  }
  if (zdr && parsed.store === true) throw new GatewayError('retention_not_permitted', { param: 'store' });
  if (zdr && parsed.conversation !== undefined && parsed.conversation !== null) {
    throw new GatewayError('retention_not_permitted', { param: 'conversation', message: 'A conversation stores its items, which a zero-data-retention workspace does not permit.' });
  }
}

function zeroDataRetention(services: ResponsesServices, auth: AuthenticatedKey, workspaceId: string | null): boolean {
  return workspaceId !== null && (services.catalog.workspaces(auth.project.id).get(workspaceId)?.zeroDataRetention ?? false);
}

/** SPEC-free OpenAI rules of `background: true` (docs/decisions.md "Background responses"). */
function checkBackground(request: ResponseRequest, zdr: boolean): void {
  if (!request.background) return;
  if (zdr) throw new GatewayError('retention_not_permitted', { param: 'background', message: 'A background response is stored until it is retrieved, which a zero-data-retention workspace does not permit.' });
  if (request.store === false) {
    throw new GatewayError('invalid_request', { param: 'background', message: 'background: true requires store: true (or store omitted): a background response is stored so that it can be retrieved.' });
  }
}

/** Where the response runs, and the body read for it. */
interface Placed {
  readonly placement: Placement;
  readonly body: { raw: Buffer; parsed: Record<string, unknown> };
  readonly workspaceId: string | null;
  readonly zdr: boolean;
}

async function place(services: ResponsesServices & RouterChatServices, ctx: RouteContext, auth: AuthenticatedKey, how: 'slug' | 'model' | 'router'): Promise<Placed> {
  const { req } = ctx;
  let placement: Placement | null = how === 'slug' ? { kind: 'direct', access: requireEndpoint(req, services, auth) } : null;
  const body = await readBody(req);
  // The model is read leniently so that a passed-through body is not held to the translator's schema;
  // a missing or malformed one gets the strict parse's precise error.
  const model = typeof body.parsed.model === 'string' && body.parsed.model !== '' ? body.parsed.model : parseResponseRequest(body.parsed).model;
  if (how === 'model') placement = { kind: 'direct', access: requireModel(req, services, auth, { model, kind: 'chat', route: '/v1/responses' }) };
  if (how === 'router') placement = { kind: 'routed', workspace: routerWorkspace(ctx, services, auth) };
  if (!placement) throw new Error('unreachable: every route names how its endpoint is found');
  if (placement.kind === 'direct') {
    assertServesChat(placement.access.endpoint);
    requireBudget(ctx, services, auth, placement.access);
  }
  const workspaceId = placement.kind === 'direct' ? placement.access.workspaceId : placement.workspace.workspaceId;
  return { placement, body, workspaceId, zdr: zeroDataRetention(services, auth, workspaceId) };
}

/** The request as one chat turn (core/responses/translate.ts), with the stored context it continues. */
interface Translated {
  readonly request: ResponseRequest;
  readonly context: Context;
  readonly input: Item[];
  readonly chatBody: Record<string, unknown>;
  readonly chat: ChatRequest;
  readonly origin: ResponsesOrigin;
}

async function translate(services: ResponsesServices, auth: AuthenticatedKey, placed: Placed): Promise<Translated> {
  const request = parseResponseRequest(placed.body.parsed);
  if (placed.zdr && request.store === true) throw new GatewayError('retention_not_permitted', { param: 'store' });
  checkBackground(request, placed.zdr);
  const context = await contextOf(services, auth, request, placed.zdr);
  const input = canonicalItems(request.input ?? [], 'input', newRequestId);
  const chatBody = chatBodyOf(request, context.items, input);
  const origin = { input: request.input, hasInstructions: Boolean(request.instructions) };
  try {
    return { request, context, input, chatBody, chat: parseChatRequest(chatBody), origin };
  } catch (err) {
    // Refusals of the translated turn name chat fields: put them back in the request's terms.
    throw asResponsesRefusal(err, origin);
  }
}

/** The Response's header, and what storing its outcome takes (the row, the conversation's new items). */
function ledgerOf(services: ResponsesServices, ctx: RouteContext, auth: AuthenticatedKey, placed: Placed, t: Translated) {
  // OpenAI stores by default; a ZDR workspace never does (an explicit true was refused in translate).
  const store = t.request.store ?? !placed.zdr;
  const conversationId = t.context.conversationId;
  const header: ResponseHeader = {
    id: ctx.req.requestId,
    createdAt: Math.floor(services.now() / 1000),
    model: t.request.model,
    request: t.request,
    store,
    conversationId,
    background: t.request.background === true,
    namespaces: chatToolsOf(t.request.tools ?? []).namespaces,
  };
  const record = (status: ResponseStatus, responseBody: Record<string, unknown>, bodyJson?: string): ResponseRecord => ({
    id: header.id,
    projectId: auth.project.id,
    workspaceId: placed.workspaceId,
    previousResponseId: t.request.previous_response_id ?? null,
    conversationId,
    status,
    input: t.input,
    body: responseBody,
    bodyJson,
    createdAt: header.createdAt,
  });
  const finish: FinishResponse = (state, responseBody, bodyJson) => {
    const failed = state.status === 'failed';
    const finished = {
      projectId: auth.project.id,
      responseId: header.id,
      failed,
      background: header.background,
      store: store ? record(state.status, responseBody, bodyJson) : null,
      conversation: conversationId !== null && !failed ? { id: conversationId, items: [...t.input, ...state.output], createdAt: header.createdAt } : null,
    };
    // A stored or background Response can be read back before any answer leaves: it is stored once its
    // turn's usage row is journaled (with the event-loop turn's shared write: usage-journal.ts).
    if (store || header.background) return services.usage.journaled().then(() => services.responses.finish(finished));
    return services.responses.finish(finished);
  };
  return { header, record, finish };
}

async function createResponse(services: ResponsesServices & RouterChatServices, background: BackgroundResponses, ctx: RouteContext, auth: AuthenticatedKey, how: 'slug' | 'model' | 'router'): Promise<void> {
  const placed = await place(services, ctx, auth, how);
  const { placement, body, workspaceId, zdr } = placed;
  if (placement.kind === 'direct' && passesThrough(placement.access.endpoint)) {
    checkPassthrough(body.parsed, zdr);
    return passThroughResponse(services, { ctx, auth, endpoint: placement.access.endpoint, workspaceId, raw: body.raw, parsed: body.parsed, route: 'chat' });
  }
  const t = await translate(services, auth, placed);
  const endpoint = placement.kind === 'direct' ? placement.access.endpoint : await routeChatTurn(services, ctx, auth, placement.workspace, t.chat).catch((err: unknown) => Promise.reject(asResponsesRefusal(err, t.origin)));
  if (passesThrough(endpoint)) {
    // The router chose a server that speaks the Responses API: it gets the client's own body.
    checkPassthrough(body.parsed, zdr);
    return passThroughResponse(services, { ctx, auth, endpoint, workspaceId, raw: body.raw, parsed: body.parsed, route: 'router' });
  }
  const ledger = ledgerOf(services, ctx, auth, placed, t);
  const route = how === 'router' ? 'router' : 'chat';
  const turn = { auth, endpoint, workspaceId, chatBody: t.chatBody, chat: t.chat, route, origin: t.origin } as const;
  if (ledger.header.background) {
    const snapshot = (status: ResponseStatus) => responseObject(ledger.header, { status, output: [], usage: null, error: null });
    const queued = ledger.record('queued', snapshot('queued'));
    const run = await background.start({
      ...turn,
      headers: ctx.req.headers,
      queued,
      inProgress: snapshot('in_progress'),
      streamed: t.request.stream === true,
      reply: (sink) => new ResponsesReply(sink, ledger.header, newRequestId, ledger.finish),
    });
    if (t.request.stream) return followRun(run, ctx.req, ctx.reply, -1);
    ctx.reply.json(200, queued.body);
    return;
  }
  await serveForeground(services, ctx, turn, new ResponsesReply(ctx.reply, ledger.header, newRequestId, ledger.finish));
}

type ForegroundTurn = Pick<BackgroundJob, 'auth' | 'endpoint' | 'workspaceId' | 'chatBody' | 'chat' | 'route' | 'origin'>;

async function serveForeground(services: ResponsesServices, ctx: RouteContext, turn: ForegroundTurn, reply: ResponsesReply): Promise<void> {
  const raw = Buffer.from(JSON.stringify(turn.chatBody));
  const { auth } = turn;
  try {
    await serveChatTurn(services, { ctx, auth, endpoint: turn.endpoint, workspaceId: turn.workspaceId, raw, parsed: turn.chatBody, chat: turn.chat, route: turn.route, reply }).catch((err: unknown) => {
      throw asResponsesRefusal(err, turn.origin);
    });
    // The answer goes out once its row is committed (responses-reply.ts): the request ends after both.
    await reply.settled();
    // Answered unstored (responses-reply.ts #store): not the client's error, so said here, for the operator.
    if (reply.storeError !== undefined) {
      services.logger.warn({ err: reply.storeError, request_id: ctx.req.requestId }, 'responses: the answered Response could not be stored; it was sent with store: false (its turn is billed once)');
    }
  } finally {
    // Refused before or by the model (the client gets the error envelope), or a stream the client left:
    // no Response reached its end, and subscribers get response.failed.
    if (!reply.finished) await services.responses.finish({ projectId: auth.project.id, responseId: ctx.req.requestId, failed: true, background: false, store: null, conversation: null });
  }
}

/**
 * The routes, and the background turns' stop (main.ts calls `close` after the HTTP drain). `instances`
 * cues the recovery of turns a stopped sibling instance left running (app/responses/background-recovery.ts).
 */
export async function createResponsesSystem(services: ResponsesServices & RouterChatServices, instances: RecoveryCue): Promise<{ routes: RouteDef[]; close(): Promise<void> }> {
  const background = createBackgroundResponses(services, instances);
  // What a stopped instance left running is failed before this one serves (a retrieve then reads it failed).
  await background.recovered;
  return { routes: responsesRoutes(services, background), close: () => background.close() };
}

function responsesRoutes(services: ResponsesServices & RouterChatServices, background: BackgroundResponses): RouteDef[] {
  return [
    keyed(services, 'inference', { method: 'POST', pattern: '/:project/:endpoint/v1/responses', family: 'responses', idPrefix: 'resp_', handle: (ctx, auth) => createResponse(services, background, ctx, auth, 'slug') }),
    keyed(services, 'inference', { method: 'POST', pattern: '/:project/v1/responses', family: 'responses', idPrefix: 'resp_', handle: (ctx, auth) => createResponse(services, background, ctx, auth, 'model') }),
    keyed(services, 'inference', { method: 'POST', pattern: '/:project/_semantic/router/v1/responses', family: 'router', idPrefix: 'resp_', handle: (ctx, auth) => createResponse(services, background, ctx, auth, 'router') }),
    ...storedResponseRoutes(services, background),
  ];
}
