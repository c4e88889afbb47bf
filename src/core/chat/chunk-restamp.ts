/**
 * The streaming fast path. Most chunks a model server streams carry nothing but a content delta, in the
 * compact OpenAI layout `{"id":..,"object":"chat.completion.chunk","created":..,"model":.., ...}`. Those
 * only need `id`, `model` and `service_tier` re-stamped and `system_fingerprint` dropped. One anchored
 * regex recognises that shape and re-stamps it in ~0.15 us, against ~2.8 us for parse + normalize +
 * stringify (measured on fresh strings; a byte-level JSON walk, and a set of substring searches, were
 * both slower). Anything else (reasoning, logprobs, usage,
 * errors, a layout we do not recognise, think-tag splitting) takes the full path in chunk-normalizer.ts.
 */
import { restampedUsage } from './completion-restamp.js';
import type { TurnContext, TurnUsage } from './turn-context.js';

/**
 * The whole common chunk, anchored at both ends: header members, then exactly one choice whose delta is
 * empty, a role, content text or both, `logprobs: null`, a finish reason (and vLLM's stop_reason), and
 * at most `usage: null`. Alternatives are disjoint, so matching is linear. Group 1: created; group 2: the
 * choices; group 3: the content text; group 4: the finish reason when not null; group 5: `,"usage":null`
 * when present.
 */
const COMMON_CHUNK = new RegExp(
  '^\\{"id":"[^"\\\\]*","object":"chat\\.completion\\.chunk","created":(\\d+),"model":"[^"\\\\]*"' +
    '(?:,"system_fingerprint":(?:null|"[^"\\\\]*"))?,' +
    '("choices":\\[\\{"index":\\d+,"delta":\\{(?:"role":"assistant"(?:,|(?=\\})))?(?:"content":"((?:[^"\\\\]|\\\\.)*)")?\\},' +
    '"logprobs":null,"finish_reason":(?:null|("[a-z_]+"))(?:,"stop_reason":(?:null|\\d+|"[^"\\\\]*"))?\\}\\])(,"usage":null)?\\}$',
);

/**
 * The usage chunk a stream ends with when usage is reported: no choices, then the usage object (one level
 * of nesting). Group 1: created; group 2: the usage.
 */
const USAGE_CHUNK = new RegExp(
  '^\\{"id":"[^"\\\\]*","object":"chat\\.completion\\.chunk","created":(\\d+),"model":"[^"\\\\]*"' +
    '(?:,"system_fingerprint":(?:null|"[^"\\\\]*"))?,"choices":\\[\\],"usage":(\\{[^{}]*(?:\\{[^{}]*\\}[^{}]*)*\\})\\}$',
);

/** A usage chunk re-stamped: its frame (null when the client did not ask for usage: nothing is sent), and the usage billed. */
export interface RestampedUsage {
  readonly frame: string | null;
  readonly usage: TurnUsage;
  /** The usage object as full normalization leaves it, serialized. */
  readonly usageJson: string;
}

export interface Restamped {
  readonly chunk: string;
  readonly hasContent: boolean;
}

export type Restamper = (data: string) => Restamped | null;

/**
 * One turn's re-stamper. `frame` gives the SSE frame the streamed turn sends (`data: <chunk>\n\n`) as one
 * string and reports content through `hadContent`, so a chunk on the fast path makes no object but its
 * match (issue 35: per-chunk garbage was the largest share of a streamed turn's added cost).
 */
export class ChunkRestamper {
  readonly #ctx: TurnContext;
  readonly #head: string;
  readonly #framedHead: string;
  readonly #tail: string;
  /** Whether the last chunk re-stamped delivered content text. */
  hadContent = false;
  /**
   * The length of the content text the last chunk re-stamped delivered, as escaped in its JSON (for the
   * usage estimate: the match already holds it, so the fast path pays no decoding for it).
   */
  contentChars = 0;
  /**
   * Whether a chunk re-stamped carried a finish reason: its choice, the stream's one (streams serve n=1),
   * has ended, and the stream is complete even if the server then closes without `[DONE]`.
   */
  finished = false;

  constructor(ctx: TurnContext) {
    this.#ctx = ctx;
    this.#head = `{"id":${JSON.stringify(ctx.requestId)},"object":"chat.completion.chunk","created":`;
    this.#framedHead = `data: ${this.#head}`;
    const adjusted = ctx.adjustedEffort === null ? '' : `,"x_adjusted_reasoning_effort":${JSON.stringify(ctx.adjustedEffort)}`;
    this.#tail = `,"model":${JSON.stringify(ctx.clientModel)},"service_tier":${JSON.stringify(ctx.lane)}${adjusted},`;
  }

  /** The chunk re-stamped, or null when it takes the full path. */
  restamp(data: string): string | null {
    return this.#build(data, this.#head, '}');
  }

  /** The chunk re-stamped as its SSE frame, or null when it takes the full path. */
  frame(data: string): string | null {
    return this.#build(data, this.#framedHead, '}\n\n');
  }

  /**
   * What a sink that reshapes the stream takes of a chunk on the fast path, instead of a chat frame: a chunk
   * that carries nothing but content text (no finish reason, no usage), that text as the body of its JSON
   * string, escapes kept; any other common chunk (a finish reason, a role alone), its choices as full
   * normalization leaves them, read from the choices alone; null when the chunk takes the full path.
   * `hadContent` as for `frame`.
   */
  reshapable(data: string): string | { readonly choices: unknown[] } | null {
    if (this.#ctx.splitInlineThink) return null;
    const match = COMMON_CHUNK.exec(data);
    if (!match) return null;
    const content = match[3] ?? '';
    this.hadContent = content !== '';
    this.contentChars = content.length;
    if (match[4] !== undefined) this.finished = true;
    const choices = match[2] ?? '';
    // Within the choices every quote of the content is escaped, so this finds the member, never the text.
    if (choices.includes('"finish_reason":null')) return content;
    try {
      return JSON.parse(`{${choices}}`) as { choices: unknown[] };
    } catch {
      return null;
    }
  }

  /**
   * The stream's usage chunk as its SSE frame, written as full normalization writes it (service_tier and
   * the adjusted effort after the usage, where normalize appends them), or null when it takes the full
   * path: a parse, the normalization and a stringify of the whole chunk cost ~4 us more a stream.
   */
  usageFrame(data: string): RestampedUsage | null {
    if (this.#ctx.splitInlineThink) return null;
    const match = USAGE_CHUNK.exec(data);
    if (!match) return null;
    const usage = restampedUsage(match[2] ?? '', this.#ctx.reasoningModel);
    if (!usage) return null;
    if (!this.#ctx.streamUsage) return { frame: null, usage: usage.turn, usageJson: usage.text };
    const ctx = this.#ctx;
    const adjusted = ctx.adjustedEffort === null ? '' : `,"x_adjusted_reasoning_effort":${JSON.stringify(ctx.adjustedEffort)}`;
    const frame =
      `${this.#framedHead}${match[1] ?? '0'},"model":${JSON.stringify(ctx.clientModel)},"choices":[],"usage":${usage.text},` +
      `"service_tier":${JSON.stringify(ctx.lane)}${adjusted}}\n\n`;
    return { frame, usage: usage.turn, usageJson: usage.text };
  }

  #build(data: string, head: string, end: string): string | null {
    if (this.#ctx.splitInlineThink) return null;
    const match = COMMON_CHUNK.exec(data);
    if (!match) return null;
    const chars = match[3]?.length ?? 0;
    this.hadContent = chars !== 0;
    this.contentChars = chars;
    if (match[4] !== undefined) this.finished = true;
    // `"usage":null` only where the client asked for usage (SPEC `stream_options`: otherwise no usage field).
    const usage = this.#ctx.streamUsage ? (match[5] ?? '') : '';
    return head + (match[1] ?? '0') + this.#tail + (match[2] ?? '') + usage + end;
  }
}

export function createRestamper(ctx: TurnContext): Restamper {
  const restamper = new ChunkRestamper(ctx);
  return (data) => {
    const chunk = restamper.restamp(data);
    return chunk === null ? null : { chunk, hasContent: restamper.hadContent };
  };
}
