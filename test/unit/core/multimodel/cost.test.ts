import { describe, expect, it } from 'vitest';
import { addUsage, dispatchCount, needsSynthesis, sumUsage, ZERO_USAGE, type Usage } from '../../../../src/core/multimodel/cost.js';

const usage = (prompt: number, completion: number, reasoning: number | null = null): Usage => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
  prompt_tokens_details: { cached_tokens: 1, audio_tokens: null },
  completion_tokens_details: { reasoning_tokens: reasoning, audio_tokens: null, accepted_prediction_tokens: null, rejected_prediction_tokens: null },
});

describe('the cost rule', () => {
  it('is n x S dispatches, plus one synthesis per choice from three sub-tasks on', () => {
    expect([1, 2, 3, 4].map(needsSynthesis)).toEqual([false, false, true, true]);
    expect(dispatchCount(1, 1)).toBe(1);
    expect(dispatchCount(1, 2)).toBe(2);
    expect(dispatchCount(1, 3)).toBe(4);
    expect(dispatchCount(3, 2)).toBe(6);
    expect(dispatchCount(3, 3)).toBe(12);
    expect(dispatchCount(200, 4)).toBe(1000);
  });

  it('adds the usage of every step and synthesis; reasoning stays null unless some dispatch reported it', () => {
    expect(sumUsage([])).toEqual(ZERO_USAGE);
    expect(sumUsage([usage(10, 16), usage(20, 16), usage(30, 16)])).toEqual({
      prompt_tokens: 60,
      completion_tokens: 48,
      total_tokens: 108,
      prompt_tokens_details: { cached_tokens: 3, audio_tokens: null },
      completion_tokens_details: { reasoning_tokens: null, audio_tokens: null, accepted_prediction_tokens: null, rejected_prediction_tokens: null },
    });
    expect(addUsage(usage(1, 2, null), usage(1, 2, 5)).completion_tokens_details.reasoning_tokens).toBe(5);
  });
});
