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

/** The usage of one chat completion, as SPEC "Chat completion response" shapes it. */
export interface Usage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  readonly prompt_tokens_details: { readonly cached_tokens: number };
  readonly completion_tokens_details: { readonly reasoning_tokens: number | null };
}

export const ZERO_USAGE: Usage = {
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
  prompt_tokens_details: { cached_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: null },
};

/** Reasoning tokens stay null unless some dispatch reported a number (a non-reasoning model reports null). */
export function addUsage(a: Usage, b: Usage): Usage {
  const ra = a.completion_tokens_details.reasoning_tokens;
  const rb = b.completion_tokens_details.reasoning_tokens;
  return {
    prompt_tokens: a.prompt_tokens + b.prompt_tokens,
    completion_tokens: a.completion_tokens + b.completion_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
    prompt_tokens_details: { cached_tokens: a.prompt_tokens_details.cached_tokens + b.prompt_tokens_details.cached_tokens },
    completion_tokens_details: { reasoning_tokens: ra === null && rb === null ? null : (ra ?? 0) + (rb ?? 0) },
  };
}

export function sumUsage(all: readonly Usage[]): Usage {
  return all.reduce(addUsage, ZERO_USAGE);
}
