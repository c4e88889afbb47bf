/**
 * The streaming fast path. Most chunks a model server streams carry nothing but a content delta, in the
 * compact OpenAI layout `{"id":..,"object":"chat.completion.chunk","created":..,"model":.., ...}`. Those
 * only need `id`, `model` and `service_tier` re-stamped and `system_fingerprint` dropped. One anchored
 * regex recognises that shape and re-stamps it in ~0.15 us, against ~2.8 us for parse + normalize +
 * stringify (measured on fresh strings; a byte-level JSON walk, and a set of substring searches, were
 * both slower). Anything else (reasoning, logprobs, usage,
 * errors, a layout we do not recognise, think-tag splitting) takes the full path in chunk-normalizer.ts.
 */
import type { TurnContext } from './turn-context.js';

/**
 * The whole common chunk, anchored at both ends: header members, then exactly one choice whose delta is
 * empty, a role, content text or both, `logprobs: null`, a finish reason (and vLLM's stop_reason), and
 * at most `usage: null`. Alternatives are disjoint, so matching is linear. Group 1: created; group 2: the
 * choices; group 3: the content text; group 4: `,"usage":null` when present.
 */
const COMMON_CHUNK = new RegExp(
  '^\\{"id":"[^"\\\\]*","object":"chat\\.completion\\.chunk","created":(\\d+),"model":"[^"\\\\]*"' +
    '(?:,"system_fingerprint":(?:null|"[^"\\\\]*"))?,' +
    '("choices":\\[\\{"index":\\d+,"delta":\\{(?:"role":"assistant"(?:,|(?=\\})))?(?:"content":"((?:[^"\\\\]|\\\\.)*)")?\\},' +
    '"logprobs":null,"finish_reason":(?:null|"[a-z_]+")(?:,"stop_reason":(?:null|\\d+|"[^"\\\\]*"))?\\}\\])(,"usage":null)?\\}$',
);

export interface Restamped {
  readonly chunk: string;
  readonly hasContent: boolean;
}

export type Restamper = (data: string) => Restamped | null;

export function createRestamper(ctx: TurnContext): Restamper {
  if (ctx.splitInlineThink) return () => null;
  const head = `{"id":${JSON.stringify(ctx.requestId)},"object":"chat.completion.chunk","created":`;
  const adjusted = ctx.adjustedEffort === null ? '' : `,"x_adjusted_reasoning_effort":${JSON.stringify(ctx.adjustedEffort)}`;
  const tail = `,"model":${JSON.stringify(ctx.clientModel)},"service_tier":${JSON.stringify(ctx.lane)}${adjusted},`;
  return (data) => {
    const match = COMMON_CHUNK.exec(data);
    if (!match) return null;
    // `"usage":null` only where the client asked for usage (SPEC `stream_options`: otherwise no usage field).
    const usage = ctx.streamUsage ? (match[4] ?? '') : '';
    return { chunk: head + (match[1] ?? '0') + tail + (match[2] ?? '') + usage + '}', hasContent: (match[3] ?? '') !== '' };
  };
}
