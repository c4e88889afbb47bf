/**
 * The usage object of SPEC "Chat completion response": every detail field always present, 0 or null
 * exactly as SPEC says, whatever subset the model server reported.
 */
import type { TurnUsage } from './turn-context.js';

type Json = Record<string, unknown>;

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});

export function normalizeUsage(raw: unknown, reasoningModel: boolean): Json {
  const u = obj(raw);
  const prompt = obj(u.prompt_tokens_details);
  const completion = obj(u.completion_tokens_details);
  const promptTokens = num(u.prompt_tokens) ?? 0;
  const completionTokens = num(u.completion_tokens) ?? 0;
  return {
    ...u,
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: num(u.total_tokens) ?? promptTokens + completionTokens,
    prompt_tokens_details: {
      ...prompt,
      cached_tokens: num(prompt.cached_tokens) ?? 0,
      audio_tokens: num(prompt.audio_tokens),
    },
    completion_tokens_details: {
      ...completion,
      // SPEC: null for non-reasoning models or when no reasoning parser is engaged.
      reasoning_tokens: reasoningModel ? num(completion.reasoning_tokens) : null,
      audio_tokens: num(completion.audio_tokens),
      accepted_prediction_tokens: num(completion.accepted_prediction_tokens),
      rejected_prediction_tokens: num(completion.rejected_prediction_tokens),
    },
  };
}

export function turnUsageOf(normalized: Json): TurnUsage {
  const prompt = obj(normalized.prompt_tokens_details);
  const completion = obj(normalized.completion_tokens_details);
  return {
    promptTokens: num(normalized.prompt_tokens) ?? 0,
    completionTokens: num(normalized.completion_tokens) ?? 0,
    cachedTokens: num(prompt.cached_tokens) ?? 0,
    reasoningTokens: num(completion.reasoning_tokens),
    source: 'upstream',
  };
}
