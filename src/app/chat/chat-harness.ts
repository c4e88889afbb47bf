/**
 * The opt-in agentic harness on the request side (SPEC "Passthrough and augmentation rules";
 * docs/decisions.md "The agentic harness"): the features that rewrite what the model receives, in a fixed
 * order, and compaction, which runs when the context check refuses. Each feature is a pure function of
 * core/harness; this file adds the I/O some need (the embedding call of tool top-k, the summary call of
 * compaction) and records which features acted, for the `x-service-augmented` response header.
 * Requests without an augmentation header never get here (chat-turn.ts checks resolveHarness once).
 */
import { inputOf, type ContextInput, type ContextVerdict } from '../../core/chat/context-window.js';
import { deadlinesFor } from '../../core/chat/deadlines.js';
import type { HarnessFlags } from '../../core/chat/header-flags.js';
import type { TurnContext } from '../../core/chat/turn-context.js';
import { dropToolsForModel } from '../../core/harness/capability-tool-drop.js';
import { compactedMessages, planCompaction, summaryRequest } from '../../core/harness/compaction.js';
import { compressBody } from '../../core/harness/compression.js';
import { fanoutNudge } from '../../core/harness/fanout-nudge.js';
import { raiseMaxTokens } from '../../core/harness/max-tokens-floor.js';
import { demoteToolChoice } from '../../core/harness/tool-choice-demotion.js';
import { keepTools, pinnedTools, selectTopK, toolText, topKCount, turnQuery } from '../../core/harness/tool-top-k.js';
import type { EndpointRecord } from '../../core/records.js';
import { GatewayError } from '../../errors.js';
import type { TurnCaller } from '../turn-io.js';
import { parseChatRequest, type ChatRequest } from '../../schemas/chat-request.js';
import { embed } from '../../upstream/embeddings.js';
import type { ChatServices } from './chat-dispatch.js';
import { exchangeOnce, type HarnessCall } from './chat-harness-call.js';

type Json = Record<string, unknown>;

/** Response header naming the features that changed the turn, comma-separated; absent when none did. */
export const AUGMENTED_HEADER = 'x-service-augmented';
const TOP_K_EMBED_TIMEOUT_MS = 10_000;
/** Tool description vectors by embedding endpoint and text: agents send the same tools every turn. */
const TOOL_VECTOR_CACHE_MAX = 4096;
const toolVectors = new Map<string, Float32Array>();

/** The request as the turn serves it: the bytes sent upstream, their parse, and the typed view. */
export interface ChatWork {
  readonly raw: Buffer;
  readonly parsed: Json;
  readonly chat: ChatRequest;
}

export interface HarnessScope {
  readonly flags: HarnessFlags;
  readonly req: TurnCaller;
  readonly endpoint: EndpointRecord;
  readonly projectId: string;
  readonly workspaceId: string | null;
  /** Tools of the turn the gateway runs itself (the x_exec bridge's offer); 0 without x_exec. */
  readonly serverOwnedTools: number;
  /** Feature names that acted, in order: appended to by every step. */
  readonly acted: string[];
}

/**
 * The request-side features in their fixed order: tool-drop first (it decides whether tools exist at
 * all), then top-k, demotion (it looks at the tools left), compression, the nudge, and the floor last
 * (it needs the final input size). Unchanged work (bytes included) when nothing acted.
 */
export async function shapeRequest(services: ChatServices, s: HarnessScope, work: ChatWork): Promise<ChatWork> {
  const f = s.flags;
  let body = work.parsed;
  const apply = (feature: string, next: Json | null): void => {
    if (!next) return;
    body = next;
    s.acted.push(feature);
  };
  if (f.capabilityToolDrop) apply('capability-tool-drop', dropToolsForModel(body, s.endpoint.model.capabilities.includes('tools')));
  if (f.toolTopK) apply('tool-top-k', await topK(services, s, body));
  if (f.toolChoiceDemotion) apply('tool-choice-demotion', demoteToolChoice(body));
  if (f.compression) apply('compression', compressBody(body));
  if (f.fanoutNudge) apply('fanout-nudge', fanoutNudge(body, s.serverOwnedTools));
  if (f.maxTokensFloor) {
    const model = s.endpoint.model;
    apply('max-tokens-floor', raiseMaxTokens(body, { reasoningModel: model.reasoning !== 'none', window: model.context_window, inputUpperBound: inputUpperBound(body) }));
  }
  return body === work.parsed ? work : reworked(body);
}

function reworked(body: Json): ChatWork {
  return { parsed: body, raw: Buffer.from(JSON.stringify(body)), chat: parseChatRequest(body) };
}

/** Tokens the input cannot exceed: its UTF-8 bytes plus framing (context-window.ts). */
function inputUpperBound(body: Json): number {
  const messages = Array.isArray(body.messages) ? (body.messages as ContextInput['messages']) : [];
  const { texts, fixedTokens } = inputOf({ messages, tools: body.tools });
  return texts.reduce((n, t) => n + Buffer.byteLength(t), fixedTokens);
}

/** The embedding endpoint of the workspace (else of the project), as the semantic router picks it. */
function embeddingEndpoint(services: ChatServices, projectId: string, workspaceId: string | null): EndpointRecord | null {
  const active = services.catalog.endpoints(projectId).filter((e) => e.kind === 'embedding' && e.status === 'active');
  const serving = active.filter((e) => workspaceId === null || e.workspaceIds.includes(workspaceId));
  return [...(serving.length > 0 ? serving : active)].sort((a, b) => (a.slug < b.slug ? -1 : 1))[0] ?? null;
}

/**
 * Tool top-k's embedding step. No embedding endpoint, or an embedding call that fails: the tools go as
 * sent (the feature does not act; it never fails a turn the model could serve).
 */
async function topK(services: ChatServices, s: HarnessScope, body: Json): Promise<Json | null> {
  const tools = Array.isArray(body.tools) ? (body.tools as Json[]) : [];
  const k = topKCount(s.req.headers);
  if (tools.length <= k) return null;
  const embedding = embeddingEndpoint(services, s.projectId, s.workspaceId);
  if (!embedding) return null;
  const texts = tools.map(toolText);
  const missing = [...new Set(texts.filter((t) => !toolVectors.has(`${embedding.id}\n${t}`)))];
  let vectors: Float32Array[];
  try {
    vectors = await embed(services.upstream, embedding, [turnQuery(Array.isArray(body.messages) ? (body.messages as Json[]) : []), ...missing], {
      model: embedding.upstream.model,
      timeoutMs: TOP_K_EMBED_TIMEOUT_MS,
      onAbort: (listener) => s.req.onAbort(listener),
      requestId: s.req.requestId,
    });
  } catch {
    return null;
  }
  if (toolVectors.size + missing.length > TOOL_VECTOR_CACHE_MAX) toolVectors.clear();
  missing.forEach((t, i) => toolVectors.set(`${embedding.id}\n${t}`, vectors[i + 1] as Float32Array));
  const query = vectors[0] as Float32Array;
  const toolVecs = texts.map((t) => toolVectors.get(`${embedding.id}\n${t}`) as Float32Array);
  const names = tools.map((t) => String(((t.function ?? {}) as Json).name ?? ''));
  return keepTools(body, selectTopK(names, pinnedTools(body), query, toolVecs, k));
}

export type Fits = (chat: ChatRequest) => ContextVerdict | Promise<ContextVerdict>;

export interface CompactionScope {
  readonly req: TurnCaller;
  readonly endpoint: EndpointRecord;
  readonly account: HarnessCall['account'];
  readonly lane: TurnContext['lane'];
  readonly route: string;
  readonly acted: string[];
}

/**
 * The context check, with compaction behind it: a 400 context_length_exceeded is answered by summarising
 * the oldest turns (one billed model call, row `<request id>.compaction`) and checking again. When the
 * conversation cannot be compacted, or still does not fit, the original 400 stands.
 */
export async function fitOrCompact(services: ChatServices, c: CompactionScope, work: ChatWork, fits: Fits): Promise<{ work: ChatWork; verdict: ContextVerdict }> {
  try {
    return { work, verdict: await fits(work.chat) };
  } catch (err) {
    if (!(err instanceof GatewayError) || err.code !== 'context_length_exceeded') throw err;
    const plan = planCompaction(Array.isArray(work.parsed.messages) ? (work.parsed.messages as Json[]) : []);
    if (!plan) throw err;
    const turn: TurnContext = { requestId: c.req.requestId, clientModel: '', lane: c.lane, reasoningModel: c.endpoint.model.reasoning !== 'none', excludeReasoning: true, splitInlineThink: true, adjustedEffort: null, streamUsage: false };
    const call: HarnessCall = { req: c.req, endpoint: c.endpoint, deadlines: deadlinesFor(c.endpoint.tier, services.timeouts, false), turn, account: c.account, route: c.route };
    const { completion } = await exchangeOnce(services, call, summaryRequest(plan, c.endpoint.upstream.model, c.endpoint.model.context_window), 'compaction');
    const message = (((completion.choices as Json[] | undefined) ?? [])[0]?.message ?? {}) as Json;
    if (typeof message.content !== 'string' || message.content.trim() === '') throw err;
    const next = reworked({ ...work.parsed, messages: compactedMessages(plan, message.content.trim()) });
    try {
      const verdict = await fits(next.chat);
      c.acted.push('compaction');
      return { work: next, verdict };
    } catch (again) {
      throw again instanceof GatewayError && again.code === 'context_length_exceeded' ? err : again;
    }
  }
}
