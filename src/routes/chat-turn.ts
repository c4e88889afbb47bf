/**
 * One chat turn once the endpoint is known: the part of a chat completion shared by the direct route
 * (endpoint named by slug) and the semantic-router routes (endpoint chosen by the router). One code path,
 * so validation, passthrough, streaming and accounting cannot drift between them.
 */
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import { checkCapabilities } from '../core/chat/capabilities.js';
import { checkContextWindow } from '../core/chat/context-window.js';
import { deadlinesFor } from '../core/chat/deadlines.js';
import { augmentationFlag } from '../core/chat/header-flags.js';
import { resolveReasoning } from '../core/chat/reasoning.js';
import { resolveServiceTier } from '../core/chat/service-tier.js';
import type { TurnContext } from '../core/chat/turn-context.js';
import { buildUpstreamBody } from '../core/chat/upstream-body.js';
import type { EndpointRecord } from '../core/records.js';
import { GatewayError } from '../errors.js';
import type { IncomingRequest } from '../http/request.js';
import type { RouteContext } from '../http/server.js';
import { parseChatRequest, type ChatRequest } from '../schemas/chat-request.js';
import { dispatchTurn, type ChatServices } from './chat-dispatch.js';

export interface ChatBody {
  /** The client's bytes, forwarded with only `model` replaced. */
  readonly raw: Buffer;
  readonly parsed: Record<string, unknown>;
  readonly chat: ChatRequest;
}

/** Reads and validates the body: 400 before anything else (routing included) looks at it. */
export async function parseChatBody(req: IncomingRequest): Promise<ChatBody> {
  const parsed = await req.json();
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new GatewayError('invalid_request', { message: 'The request body must be a JSON object.' });
  }
  const body = parsed as Record<string, unknown>;
  return { raw: await req.body(), parsed: body, chat: parseChatRequest(body) };
}

export interface ChatTurnInput extends ChatBody {
  readonly ctx: RouteContext;
  readonly auth: AuthenticatedKey;
  readonly endpoint: EndpointRecord;
  readonly workspaceId: string | null;
  /** Usage ledger label: `chat` on direct routes, `router` on semantic-router routes. */
  readonly route: 'chat' | 'router';
}

/** Capability checks, reasoning mapping, tier, context window, then exactly one upstream turn. */
export async function serveChatTurn(services: ChatServices, input: ChatTurnInput): Promise<void> {
  const { ctx, auth, endpoint, workspaceId, raw, parsed, chat } = input;
  const { req, reply } = ctx;
  const workspace = workspaceId ? services.catalog.workspaces(auth.project.id).get(workspaceId) : undefined;
  checkCapabilities(chat, {
    model: endpoint.model,
    zeroDataRetention: workspace?.zeroDataRetention ?? false,
    projectHasSpeechEndpoint: services.catalog.endpoints(auth.project.id).some((e) => e.kind === 'speech' && e.status === 'active'),
    videoInputEnabled: services.features.video_input,
    audioInputEnabled: services.features.audio_input,
  });
  const reasoning = resolveReasoning(chat, endpoint.model);
  const tier = resolveServiceTier(chat.service_tier);
  const clamp = augmentationFlag(req.headers, 'x-service-augment-max-output-tokens-clamp');
  const verdict = await checkContextWindow(chat, endpoint.model.context_window, async (texts) => services.pool.countTokens({ texts }, req.signal), clamp);
  const adjustedEffort = reasoning.adjustedFrom !== null ? reasoning.effort : null;
  // Image URLs are fetched and inlined first (SPEC "Message object"); `source` is `raw` when none were.
  const source = services.media ? await services.media.resolve(raw, parsed, chat, req) : raw;
  const body = buildUpstreamBody(source, parsed, { upstreamModel: endpoint.upstream.model, clamp: verdict.clamp, adjustedEffort });
  const turn: TurnContext = {
    requestId: req.requestId,
    clientModel: chat.model,
    lane: tier.lane,
    reasoningModel: endpoint.model.reasoning !== 'none',
    excludeReasoning: reasoning.exclude,
    splitInlineThink: augmentationFlag(req.headers, 'x-service-augment-reasoning-normalization'),
    adjustedEffort,
  };
  await dispatchTurn(services, {
    req,
    reply,
    endpoint,
    body,
    stream: chat.stream === true,
    turn,
    deadlines: deadlinesFor(endpoint.tier, services.timeouts, chat.reasoning_effort !== undefined && chat.reasoning_effort !== null),
    promptEstimate: verdict.inputTokens,
    account: { projectId: auth.project.id, workspaceId, keyId: auth.key.id, multiplier: tier.multiplier },
    chat,
    route: input.route,
  });
}
