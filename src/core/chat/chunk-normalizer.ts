/**
 * Streamed chunks, reshaped one by one as they arrive (never buffered): our id, the client's model,
 * service_tier on every chunk, no system_fingerprint, reasoning only on `reasoning`/`reasoning_content`,
 * logprobs only on chunks that deliver content (SPEC: a reasoning-only chunk carries none, and the
 * end-of-turn token has no entry). Also keeps what accounting needs when the stream has no usage chunk.
 */
import { ThinkSplitter } from './think-splitter.js';
import type { TurnContext, TurnUsage } from './turn-context.js';
import { estimatedTurnUsage, normalizeUsage, textTokens, turnUsageOf, usageObjectOf } from './usage.js';

type Json = Record<string, unknown>;

export class ChunkNormalizer {
  readonly #ctx: TurnContext;
  readonly #splitters = new Map<number, ThinkSplitter>();
  #usage: TurnUsage | null = null;
  #contentChunks = 0;
  #reasoningChunks = 0;
  /** Estimated tokens of what was streamed (usage.ts textTokens, per delta): read only when no usage came. */
  #answerTokens = 0;
  #reasoningTokens = 0;
  #finished = false;

  constructor(ctx: TurnContext) {
    this.#ctx = ctx;
  }

  /** Upstream-reported usage, once its usage chunk has passed. */
  get usage(): TurnUsage | null {
    return this.#usage;
  }

  /** Usage estimated from the text streamed: each delta by its length (usage.ts textTokens). */
  estimatedUsage(promptTokens: number): TurnUsage {
    return estimatedTurnUsage(promptTokens, this.#answerTokens, this.#reasoningTokens, this.#ctx.reasoningModel);
  }

  /**
   * The usage chunk for a client that asked include_usage when the model server sent none: the estimate,
   * as the last chunk before [DONE] (SPEC `stream_options`: "the final chunk carries usage").
   */
  estimatedUsageChunk(usage: TurnUsage): Json {
    const ctx = this.#ctx;
    const chunk: Json = {
      id: ctx.requestId,
      object: 'chat.completion.chunk',
      created: Math.floor(Date.now() / 1000),
      model: ctx.clientModel,
      choices: [],
      usage: usageObjectOf(usage, ctx.reasoningModel),
      service_tier: ctx.lane,
    };
    if (ctx.adjustedEffort !== null) chunk.x_adjusted_reasoning_effort = ctx.adjustedEffort;
    return chunk;
  }

  /** Whether a choice normalized so far carried a finish reason (streams serve n=1: the stream's one choice ended). */
  get finished(): boolean {
    return this.#finished;
  }

  /** Content and reasoning chunks seen so far: the first one is the turn's first token (latency SLOs). */
  get tokenChunks(): number {
    return this.#contentChunks + this.#reasoningChunks;
  }

  /** Counts a chunk that took the fast path (chunk-restamp.ts), for the usage estimate: its content's length. */
  countRestamped(contentChars: number): void {
    if (contentChars === 0) return;
    this.#contentChunks++;
    this.#answerTokens += textTokens(contentChars);
  }

  /** Keeps the usage of a usage chunk that took the fast path (chunk-restamp.ts usageFrame). */
  countUsage(usage: TurnUsage): void {
    this.#usage = usage;
  }

  /** The chunk to send, or null when nothing is left of it (e.g. excluded reasoning). */
  normalize(chunk: Json): Json | null {
    const ctx = this.#ctx;
    chunk.id = ctx.requestId;
    chunk.model = ctx.clientModel;
    chunk.service_tier = ctx.lane;
    if ('system_fingerprint' in chunk) delete chunk.system_fingerprint;
    if (ctx.adjustedEffort !== null) chunk.x_adjusted_reasoning_effort = ctx.adjustedEffort;
    let meaningful = false;
    if (chunk.usage && typeof chunk.usage === 'object') {
      const usage = normalizeUsage(chunk.usage, ctx.reasoningModel);
      chunk.usage = usage;
      this.#usage = turnUsageOf(usage);
      meaningful = ctx.streamUsage;
    }
    if (!ctx.streamUsage) delete chunk.usage;
    const choices = Array.isArray(chunk.choices) ? (chunk.choices as Json[]) : [];
    // A chunk without choices says something only as the usage chunk the client asked for.
    if (choices.length === 0 && ctx.streamUsage) meaningful = true;
    for (const choice of choices) {
      if (this.#normalizeChoice(choice)) meaningful = true;
    }
    return meaningful ? chunk : null;
  }

  /** Text a think splitter still holds at end of stream, as final chunks. */
  flush(): Json[] {
    const out: Json[] = [];
    for (const [index, splitter] of this.#splitters) {
      const rest = splitter.flush();
      const delta: Json = {};
      if (rest.content) delta.content = rest.content;
      if (rest.reasoning && !this.#ctx.excludeReasoning) delta.reasoning = delta.reasoning_content = rest.reasoning;
      if (Object.keys(delta).length === 0) continue;
      out.push({
        id: this.#ctx.requestId,
        object: 'chat.completion.chunk',
        created: Math.floor(Date.now() / 1000),
        model: this.#ctx.clientModel,
        service_tier: this.#ctx.lane,
        choices: [{ index, delta, logprobs: null, finish_reason: null }],
      });
    }
    return out;
  }

  /** Returns whether the choice still says anything after normalization. */
  #normalizeChoice(choice: Json): boolean {
    const delta = (choice.delta && typeof choice.delta === 'object' ? choice.delta : {}) as Json;
    choice.delta = delta;
    let reasoning = typeof delta.reasoning_content === 'string' ? delta.reasoning_content : typeof delta.reasoning === 'string' ? delta.reasoning : '';
    delete delta.reasoning_content;
    delete delta.reasoning;
    if (this.#ctx.splitInlineThink && typeof delta.content === 'string' && delta.content !== '') {
      const index = typeof choice.index === 'number' ? choice.index : 0;
      let splitter = this.#splitters.get(index);
      if (!splitter) this.#splitters.set(index, (splitter = new ThinkSplitter()));
      const part = splitter.push(delta.content);
      reasoning += part.reasoning;
      if (part.content) delta.content = part.content;
      else delete delta.content;
    }
    const hasContent = typeof delta.content === 'string' && delta.content !== '';
    if (hasContent) {
      this.#contentChunks++;
      this.#answerTokens += textTokens((delta.content as string).length);
    }
    if (typeof delta.refusal === 'string') this.#answerTokens += textTokens(delta.refusal.length);
    if (Array.isArray(delta.tool_calls)) this.#answerTokens += textTokens(toolCallChars(delta.tool_calls));
    if (reasoning) {
      this.#reasoningChunks++;
      this.#reasoningTokens += textTokens(reasoning.length);
      if (!this.#ctx.excludeReasoning) delta.reasoning = delta.reasoning_content = reasoning;
    }
    if (!hasContent && choice.logprobs) choice.logprobs = null;
    if (hasContent && choice.logprobs && typeof choice.logprobs === 'object') {
      const lp = choice.logprobs as Json;
      if (!('refusal' in lp)) lp.refusal = null;
    }
    const finished = choice.finish_reason !== null && choice.finish_reason !== undefined;
    if (finished) this.#finished = true;
    return Object.keys(delta).length > 0 || finished;
  }
}

/** Characters of a tool-call delta's function name and argument text (for the usage estimate). */
function toolCallChars(calls: unknown[]): number {
  let chars = 0;
  for (const call of calls) {
    const fn = call && typeof call === 'object' ? (call as Json).function : null;
    if (!fn || typeof fn !== 'object') continue;
    const { name, arguments: args } = fn as Json;
    if (typeof name === 'string') chars += name.length;
    if (typeof args === 'string') chars += args.length;
  }
  return chars;
}
