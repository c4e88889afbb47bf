/**
 * SPEC behaviour 10, the cost rule: for n choices and S sub-tasks, n x S dispatches, plus one synthesis
 * dispatch per choice when S is 3 or more; `usage` covers the steps and the syntheses. The planner call is
 * routing work, not a dispatch, and is not billed (like the router's query embedding, behaviour 4).
 */

export const SYNTHESIS_MIN_SUBTASKS = 3;

export function needsSynthesis(subtasks: number): boolean {
  return subtasks >= SYNTHESIS_MIN_SUBTASKS;
}

/** Billed model turns of a multimodel turn. */
export function dispatchCount(n: number, subtasks: number): number {
  return n * subtasks + (needsSynthesis(subtasks) ? n : 0);
}

/** The usage of one chat completion, as SPEC "Chat completion response" shapes it (every detail field). */
export interface Usage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  readonly prompt_tokens_details: { readonly cached_tokens: number; readonly audio_tokens: number | null };
  readonly completion_tokens_details: {
    readonly reasoning_tokens: number | null;
    readonly audio_tokens: number | null;
    readonly accepted_prediction_tokens: number | null;
    readonly rejected_prediction_tokens: number | null;
  };
}

export const ZERO_USAGE: Usage = {
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
  prompt_tokens_details: { cached_tokens: 0, audio_tokens: null },
  completion_tokens_details: { reasoning_tokens: null, audio_tokens: null, accepted_prediction_tokens: null, rejected_prediction_tokens: null },
};

/**
 * A nullable count stays null unless some dispatch reported a number: SPEC's null means "this kind of
 * token does not apply" (a non-reasoning or text-only model), which a sum of such dispatches keeps.
 */
const addCount = (a: number | null, b: number | null): number | null => (a === null && b === null ? null : (a ?? 0) + (b ?? 0));

export function addUsage(a: Usage, b: Usage): Usage {
  const pa = a.prompt_tokens_details;
  const pb = b.prompt_tokens_details;
  const ca = a.completion_tokens_details;
  const cb = b.completion_tokens_details;
  return {
    prompt_tokens: a.prompt_tokens + b.prompt_tokens,
    completion_tokens: a.completion_tokens + b.completion_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
    prompt_tokens_details: { cached_tokens: pa.cached_tokens + pb.cached_tokens, audio_tokens: addCount(pa.audio_tokens, pb.audio_tokens) },
    completion_tokens_details: {
      reasoning_tokens: addCount(ca.reasoning_tokens, cb.reasoning_tokens),
      audio_tokens: addCount(ca.audio_tokens, cb.audio_tokens),
      accepted_prediction_tokens: addCount(ca.accepted_prediction_tokens, cb.accepted_prediction_tokens),
      rejected_prediction_tokens: addCount(ca.rejected_prediction_tokens, cb.rejected_prediction_tokens),
    },
  };
}

export function sumUsage(all: readonly Usage[]): Usage {
  return all.reduce(addUsage, ZERO_USAGE);
}
