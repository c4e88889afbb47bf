/**
 * The usage object of SPEC "Chat completion response": every detail field always present, 0 or null
 * exactly as SPEC says, whatever subset the model server reported.
 */
import type { TurnUsage } from './turn-context.js';

type Json = Record<string, unknown>;

/** A token count as reported, or null when the server sent none (SPEC's null: does not apply). */
export const countOf = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});

/**
 * Fills the SPEC fields in place (the object is the one just parsed from the upstream's JSON and is not
 * shared): unknown fields the model server added stay where they are.
 */
export function normalizeUsage(raw: unknown, reasoningModel: boolean): Json {
  const u = obj(raw);
  const promptTokens = countOf(u.prompt_tokens) ?? 0;
  const completionTokens = countOf(u.completion_tokens) ?? 0;
  u.prompt_tokens = promptTokens;
  u.completion_tokens = completionTokens;
  u.total_tokens = countOf(u.total_tokens) ?? promptTokens + completionTokens;
  const prompt = obj(u.prompt_tokens_details);
  prompt.cached_tokens = countOf(prompt.cached_tokens) ?? 0;
  prompt.audio_tokens = countOf(prompt.audio_tokens);
  u.prompt_tokens_details = prompt;
  const completion = obj(u.completion_tokens_details);
  // SPEC: null for non-reasoning models or when no reasoning parser is engaged.
  completion.reasoning_tokens = reasoningModel ? countOf(completion.reasoning_tokens) : null;
  completion.audio_tokens = countOf(completion.audio_tokens);
  completion.accepted_prediction_tokens = countOf(completion.accepted_prediction_tokens);
  completion.rejected_prediction_tokens = countOf(completion.rejected_prediction_tokens);
  u.completion_tokens_details = completion;
  return u;
}

export function turnUsageOf(normalized: Json): TurnUsage {
  const prompt = obj(normalized.prompt_tokens_details);
  const completion = obj(normalized.completion_tokens_details);
  return {
    promptTokens: countOf(normalized.prompt_tokens) ?? 0,
    completionTokens: countOf(normalized.completion_tokens) ?? 0,
    cachedTokens: countOf(prompt.cached_tokens) ?? 0,
    reasoningTokens: countOf(completion.reasoning_tokens),
    source: 'upstream',
  };
}
