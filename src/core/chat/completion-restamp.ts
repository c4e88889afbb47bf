/**
 * The non-streamed fast path, as chunk-restamp.ts is for streams. Most completions a model server answers
 * are one assistant text choice in the compact OpenAI layout. For those the normalized body
 * (normalize-completion.ts) differs from the upstream's only in the header members, the message's
 * always-present fields and the usage details. One anchored regex recognises that shape; the answer is
 * then written from its parts, and only the usage object is parsed. That replaces a parse of the whole
 * body, the normalization and a stringify of the result: together, the largest cost of a buffered turn
 * (about 7% of the gateway's CPU per request, perf).
 *
 * Anything else (tool calls, several choices, logprobs, reasoning, unknown members, think-tag splitting,
 * whitespace between tokens) takes the full path. The text is sent as the upstream escaped it, so the
 * bytes may differ from a re-serialization (`\u00e9` for `é`), never the value.
 */
import type { TurnContext, TurnUsage } from './turn-context.js';
import { normalizeUsage, turnUsageOf } from './usage.js';

/**
 * Anchored at both ends, alternatives disjoint (linear matching). Group 1: created; 2: the content as a
 * JSON string token (only valid escapes and no raw control characters: it is sent on unparsed); 3: the finish reason token; 4: the usage object (one level of nesting).
 */
const COMMON_COMPLETION = new RegExp(
  '^\\{"id":"[^"\\\\]*","object":"chat\\.completion","created":(0|[1-9]\\d*),"model":"[^"\\\\]*",' +
    '"choices":\\[\\{"index":0,"message":\\{"role":"assistant","content":("(?:[^"\\\\\\u0000-\\u001f]|\\\\["\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4})*")' +
    '(?:,"refusal":null)?(?:,"annotations":\\[\\])?(?:,"tool_calls":\\[\\])?\\},' +
    '"logprobs":null,"finish_reason":("[a-z_]+")\\}\\],' +
    '"usage":(\\{[^{}]*(?:\\{[^{}]*\\}[^{}]*)*\\})' +
    '(?:,"service_tier":(?:null|"[^"\\\\]*"))?(?:,"system_fingerprint":(?:null|"[^"\\\\]*"))?\\}$',
);

const N = '(0|[1-9]\\d*)';
/**
 * The usage most servers send: the three counts, then the cached details, and the reasoning details after
 * them, or none (normalizeUsage's member order then equals the upstream's). Written out
 * from its numbers; a parse, normalizeUsage and a stringify cost twice the regex above (measured).
 */
const COMMON_USAGE = new RegExp(
  `^\\{"prompt_tokens":${N},"completion_tokens":${N},"total_tokens":${N}` +
    `(?:,"prompt_tokens_details":\\{"cached_tokens":${N}\\}(?:,"completion_tokens_details":\\{"reasoning_tokens":${N}\\})?)?\\}$`,
);

export interface RestampedCompletion {
  /** The normalized completion, serialized. */
  readonly text: string;
  readonly usage: TurnUsage;
}

/** The normalized body for a completion of the common shape, or null: then normalizeCompletion decides. */
export function restampCompletion(text: string, ctx: TurnContext): RestampedCompletion | null {
  if (ctx.splitInlineThink) return null;
  const match = COMMON_COMPLETION.exec(text);
  if (!match) return null;
  const usage = restampedUsage(match[4] ?? '', ctx.reasoningModel);
  if (!usage) return null;
  const adjusted = ctx.adjustedEffort === null ? '' : `,"x_adjusted_reasoning_effort":${JSON.stringify(ctx.adjustedEffort)}`;
  const body =
    `{"id":${JSON.stringify(ctx.requestId)},"object":"chat.completion","created":${match[1] ?? '0'},"model":${JSON.stringify(ctx.clientModel)},` +
    `"choices":[{"index":0,"message":{"role":"assistant","content":${match[2] ?? '""'},"refusal":null,"tool_calls":null,"annotations":[]},` +
    `"logprobs":null,"finish_reason":${match[3] ?? 'null'}}],"usage":${usage.text},"service_tier":"${ctx.lane}","system_fingerprint":null${adjusted}}`;
  return { text: body, usage: usage.turn };
}

/** The usage object as normalizeUsage would serialize it, and its counts; null if it is not JSON. */
export function restampedUsage(raw: string, reasoningModel: boolean): { text: string; turn: TurnUsage } | null {
  const m = COMMON_USAGE.exec(raw);
  if (m) {
    const reasoning = reasoningModel && m[5] !== undefined ? m[5] : 'null';
    const turn: TurnUsage = {
      promptTokens: Number(m[1]),
      completionTokens: Number(m[2]),
      cachedTokens: m[4] === undefined ? 0 : Number(m[4]),
      reasoningTokens: reasoning === 'null' ? null : Number(reasoning),
      source: 'upstream',
    };
    const text =
      `{"prompt_tokens":${m[1]},"completion_tokens":${m[2]},"total_tokens":${m[3]},"prompt_tokens_details":{"cached_tokens":${m[4] ?? '0'},"audio_tokens":null},` +
      `"completion_tokens_details":{"reasoning_tokens":${reasoning},"audio_tokens":null,"accepted_prediction_tokens":null,"rejected_prediction_tokens":null}}`;
    return { text, turn };
  }
  try {
    const usage = normalizeUsage(JSON.parse(raw), reasoningModel);
    return { text: JSON.stringify(usage), turn: turnUsageOf(usage) };
  } catch {
    return null;
  }
}
