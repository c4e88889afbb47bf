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

/**
 * Tokens of a piece of generated text the model server reported no usage for, from its length alone
 * (docs/decisions.md "Usage the model server did not report"): a token per 4 characters, less two, and
 * at least one. A streamed delta of up to 12 characters (one token of the usual one-token-a-delta stream:
 * the model's own count, which no tokenizer of ours could match) counts one; a batched delta or a whole
 * buffered answer counts about a token per 4 characters. Applied per delta when streaming, so a chunk
 * pays an addition and nothing else.
 */
export const textTokens = (chars: number): number => (chars <= 0 ? 0 : Math.max(1, Math.ceil(chars / 4) - 2));

/** A turn's usage when the model server reported none: counts from the prompt estimate and the generated text. */
export function estimatedTurnUsage(promptTokens: number, answerTokens: number, reasoningTokens: number, reasoningModel: boolean): TurnUsage {
  return {
    promptTokens,
    completionTokens: answerTokens + reasoningTokens,
    cachedTokens: 0,
    reasoningTokens: reasoningModel ? reasoningTokens : null,
    source: 'estimated',
  };
}

/**
 * The client's usage object for an estimated turn: the same counts the ledger holds, in SPEC's shape and
 * without a flag (the OpenAI usage object has none; the ledger row says `usage_source: estimated`).
 */
export function usageObjectOf(usage: TurnUsage, reasoningModel: boolean): Json {
  return normalizeUsage(
    { prompt_tokens: usage.promptTokens, completion_tokens: usage.completionTokens, completion_tokens_details: { reasoning_tokens: usage.reasoningTokens } },
    reasoningModel,
  );
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
