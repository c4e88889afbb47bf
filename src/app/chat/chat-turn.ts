/**
 * One chat turn once the endpoint is known: the part of a chat completion shared by the direct route
 * (endpoint named by slug) and the semantic-router routes (endpoint chosen by the router). One code path,
 * so validation, passthrough, streaming and accounting cannot drift between them.
 */
import type { AuthenticatedKey } from '../../core/auth/authenticate.js';
import { checkCapabilities } from '../../core/chat/capabilities.js';
import { checkContextWindow, type ContextVerdict } from '../../core/chat/context-window.js';
import { deadlinesFor } from '../../core/chat/deadlines.js';
import { resolveHarness } from '../../core/chat/header-flags.js';
import { applyPartEdits, type EditedBody, type PartEdit } from '../../core/chat/part-edits.js';
import { resolveReasoning } from '../../core/chat/reasoning.js';
import { resolveServiceTier } from '../../core/chat/service-tier.js';
import type { TurnContext } from '../../core/chat/turn-context.js';
import { buildUpstreamBody } from '../../core/chat/upstream-body.js';
import type { EndpointRecord } from '../../core/records.js';
import { GatewayError } from '../../errors.js';
import type { ContentPart } from '../../schemas/chat-message.js';
import type { ChatRequest } from '../../schemas/chat-request.js';
import type { TurnExchange, TurnSink } from '../turn-io.js';
import { planSpeech, projectAudioEndpoint, speakAnswers, transcribeAudioParts, withoutAudioOutput, type AudioTurn } from './chat-audio.js';
import { dispatchTurn, type ChatServices } from './chat-dispatch.js';
import { execOptIn, serveBridgedTurn } from './chat-exec-bridge.js';
import { repairsAnswers, serveRepairedTurn } from './chat-harness-answer.js';
import { AUGMENTED_HEADER, fitOrCompact, shapeRequest, type ChatWork } from './chat-harness.js';
import { timeoutEvent } from '../sse-frames.js';

/** A chat request's body as the route parsed it (routes/chat-body.ts). */
export interface ChatBody {
  /** The client's bytes, forwarded with only `model` replaced. */
  readonly raw: Buffer;
  readonly parsed: Record<string, unknown>;
  readonly chat: ChatRequest;
}

export interface ChatTurnInput extends ChatBody {
  readonly ctx: TurnExchange;
  readonly auth: AuthenticatedKey;
  readonly endpoint: EndpointRecord;
  readonly workspaceId: string | null;
  /** Usage ledger label: `chat` on direct routes, `router` on semantic-router routes. */
  readonly route: 'chat' | 'router';
  /** Answers through this instead of ctx.reply (the Responses API translates the chat answer on its way out). */
  readonly reply?: TurnSink;
  /**
   * The harness default of the surface (SPEC Passthrough 2): false (omitted) for API traffic; the service's
   * own chat surfaces (the dashboard playground) pass true, so every feature but tool top-k is on unless a
   * header turns it off.
   */
  readonly surfaceDefault?: boolean;
}

/**
 * Capability checks, reasoning mapping, tier, context window, then exactly one upstream turn: more only
 * when an opted-in harness feature adds them (compaction, corrective retries), each billed on its own row.
 */
export function serveChatTurn(services: ChatServices, input: ChatTurnInput): Promise<void> {
  const turn = serveTurn(services, input);
  // Only a streamed turn answered on the route's own reply can need the timeout event below: other turns
  // get no extra promise.
  return input.reply === undefined && input.chat.stream === true ? turn.catch((err: unknown) => streamedTimeout(input, err)) : turn;
}

/**
 * SPEC "Timeouts by service tier": non-streaming timeouts return 408, streaming sends an SSE `error` event.
 * A streamed turn overruns before its stream begins when the model server sends no headers in time, or
 * when the turn is answered whole first (answer-side harness features, the exec bridge): the request still
 * asked for a stream, so it gets the event, not a 408. A stream already begun reports its own timeouts
 * (chat-stream.ts) and never throws one. Other sinks (Responses, the playground) speak their own formats
 * and keep theirs. Any other error is thrown on.
 */
function streamedTimeout(input: ChatTurnInput, err: unknown): void {
  if (!(err instanceof GatewayError) || err.code !== 'timeout') throw err;
  input.ctx.reply.setHeader('Cache-Control', 'no-cache');
  input.ctx.reply.beginStream(200, 'text/event-stream');
  input.ctx.reply.endStream(timeoutEvent(err.message));
}

async function serveTurn(services: ChatServices, input: ChatTurnInput): Promise<void> {
  const { ctx, auth, endpoint, workspaceId, chat } = input;
  const { req } = ctx;
  const reply = input.reply ?? ctx.reply;
  // x_exec (docs/exec.md "Chat tool bridge") is opt-in: every other request pays this one property check.
  const exec = input.parsed.x_exec === undefined ? null : execOptIn(input.parsed, auth, workspaceId, chat, services.execTools, endpoint.model);
  // One scan of the header names; requests without augmentation headers get HARNESS_OFF and skip it all.
  const harness = resolveHarness(req.headers, input.surfaceDefault === true);
  const acted: string[] = [];
  let work: ChatWork = exec ? { raw: exec.raw, parsed: exec.parsed, chat } : input;
  if (harness.any) {
    const serverOwnedTools = harness.fanoutNudge && exec?.on && services.execTools && exec.workspaceId !== null ? services.execTools.offer(auth.project.id, exec.workspaceId).size : 0;
    work = await shapeRequest(services, { flags: harness, req, endpoint, projectId: auth.project.id, workspaceId, serverOwnedTools, acted }, work);
  }
  checkTurnCapabilities(services, input, work.chat);
  const audio: AudioTurn = { req, account: { projectId: auth.project.id, workspaceId, keyId: auth.key.id } };
  const speech = planSpeech(services, audio.account, chat);
  const reasoning = resolveReasoning(chat, endpoint.model);
  const tier = resolveServiceTier(chat.service_tier);
  const fits = (c: ChatRequest) => checkContextWindow(c, endpoint.model.context_window, async (texts, stopAbove) => services.pool.countTokens({ texts, stopAbove }, req.signal), harness.maxOutputTokensClamp);
  let before: ContextVerdict;
  if (harness.compaction) {
    const account = { projectId: auth.project.id, workspaceId, keyId: auth.key.id, multiplier: tier.multiplier };
    ({ work, verdict: before } = await fitOrCompact(services, { req, endpoint, account, lane: tier.lane, route: input.route, acted }, work, fits));
  } else {
    const fitting = fits(work.chat);
    // Most requests are proved to fit by their byte count alone, with no pool hop and so no promise to wait on.
    before = fitting instanceof Promise ? await fitting : fitting;
  }
  const adjustedEffort = reasoning.adjustedFrom !== null ? reasoning.effort : null;
  // SPEC "Message object": image URLs inlined and audio transcribed before the model sees the turn; the
  // window is checked again against the transcripts, which stand where a fixed allowance stood.
  const media = work.chat.messages.some((m) => Array.isArray(m.content)) ? await resolveParts(services, audio, work.raw, work.parsed, work.chat) : { body: { raw: work.raw, parsed: work.parsed }, chat: work.chat };
  const verdict = media.chat !== work.chat ? await fits(media.chat) : before;
  if (verdict.clamp) acted.push('max-output-tokens-clamp');
  // The gateway produces the audio output itself: the model is asked for text (docs/decisions.md).
  const source = speech ? withoutAudioOutput(media.body) : media.body;
  const body = buildUpstreamBody(source.raw, source.parsed, { upstreamModel: endpoint.upstream.model, clamp: verdict.clamp, adjustedEffort });
  const turn = turnContextOf(input, tier.lane, reasoning.exclude, harness.reasoningNormalization, adjustedEffort);
  // SPEC: with an effort set the idle timeout is the request deadline, however it was asked for (reasoning_effort, reasoning.effort or reasoning.enabled).
  const deadlines = deadlinesFor(endpoint.tier, services.timeouts, reasoning.effort !== null);
  // The answer-side features need the whole answer first: such turns are served buffered (chat-harness-answer.ts).
  const repair = harness.any && exec?.on !== true && repairsAnswers(harness, media.chat);
  if (acted.length > 0 && !repair) reply.setHeader(AUGMENTED_HEADER, acted.join(','));
  if (exec?.on && services.execTools && exec.workspaceId !== null) {
    return serveBridgedTurn(services, services.execTools, {
      req,
      reply,
      endpoint,
      base: JSON.parse(body.toString('utf8')) as Record<string, unknown>,
      stream: chat.stream === true,
      includeUsage: chat.stream_options?.include_usage === true,
      turn,
      deadlines,
      account: { projectId: auth.project.id, workspaceId: exec.workspaceId, keyId: auth.key.id, multiplier: tier.multiplier },
      route: input.route,
    });
  }
  if (repair) {
    return serveRepairedTurn(services, {
      req,
      reply,
      endpoint,
      body,
      stream: chat.stream === true,
      includeUsage: chat.stream_options?.include_usage === true,
      turn,
      deadlines,
      account: { projectId: auth.project.id, workspaceId, keyId: auth.key.id, multiplier: tier.multiplier },
      route: input.route,
      flags: harness,
      acted,
      complete: speech ? (completion) => speakAnswers(services, speech, audio, completion) : undefined,
    });
  }
  await dispatchTurn(services, {
    req,
    reply,
    endpoint,
    body,
    stream: chat.stream === true,
    turn,
    deadlines,
    promptEstimate: verdict.inputTokens,
    // Named fields, not a spread of audio.account: V8 gave the spread copy a new hidden class on every
    // request (read through megamorphic lookups in the ledger row; seen with --log-ic).
    account: { projectId: audio.account.projectId, workspaceId, keyId: audio.account.keyId, multiplier: tier.multiplier },
    chat: media.chat,
    route: input.route,
    complete: speech ? (completion) => speakAnswers(services, speech, audio, completion) : undefined,
  });
}

/** SPEC capability checks against the endpoint's model, the workspace's retention rule and the features on. */
function checkTurnCapabilities(services: ChatServices, input: ChatTurnInput, chat: ChatRequest): void {
  const { auth, endpoint, workspaceId } = input;
  const workspace = workspaceId ? services.catalog.workspaces(auth.project.id).get(workspaceId) : undefined;
  checkCapabilities(chat, {
    model: endpoint.model,
    zeroDataRetention: workspace?.zeroDataRetention ?? false,
    projectHasSpeechEndpoint: projectAudioEndpoint(services, auth.project.id, 'speech') !== undefined,
    videoInputEnabled: services.features.video_input,
    audioInputEnabled: services.features.audio_input,
  });
}

/** What the answer's chunks and completion are stamped with. */
function turnContextOf(input: ChatTurnInput, lane: TurnContext['lane'], excludeReasoning: boolean, splitInlineThink: boolean, adjustedEffort: TurnContext['adjustedEffort']): TurnContext {
  const { chat } = input;
  return {
    requestId: input.ctx.req.requestId,
    clientModel: chat.model,
    lane,
    reasoningModel: input.endpoint.model.reasoning !== 'none',
    excludeReasoning,
    splitInlineThink,
    adjustedEffort,
    streamUsage: chat.stream_options?.include_usage === true,
  };
}

interface ResolvedParts {
  readonly body: EditedBody;
  /** The request as the model reads it: `chat` itself unless audio parts became text. */
  readonly chat: ChatRequest;
}

/**
 * Image fetches and transcriptions of one request, all at once; one re-serialization of `messages`. When
 * both fail, the image error is reported (it is the client's URL; a transcription failure may be ours).
 */
async function resolveParts(services: ChatServices, audio: AudioTurn, raw: Buffer, parsed: Record<string, unknown>, chat: ChatRequest): Promise<ResolvedParts> {
  const [images, transcripts] = await Promise.allSettled([
    services.media ? services.media.images(parsed, chat, audio.req) : Promise.resolve([]),
    transcribeAudioParts(services, audio, chat),
  ]);
  if (images.status === 'rejected') throw images.reason;
  if (transcripts.status === 'rejected') throw transcripts.reason;
  const body = applyPartEdits(raw, parsed, [...images.value, ...transcripts.value]);
  return { body, chat: transcripts.value.length > 0 ? withParts(chat, transcripts.value) : chat };
}

function withParts(chat: ChatRequest, edits: readonly PartEdit[]): ChatRequest {
  const messages = [...chat.messages];
  for (const edit of edits) {
    const message = messages[edit.message];
    if (!message || !Array.isArray(message.content)) continue;
    const content = [...message.content];
    content[edit.part] = edit.value as ContentPart;
    messages[edit.message] = { ...message, content };
  }
  return { ...chat, messages };
}
