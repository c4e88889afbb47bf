import { describe, expect, it } from 'vitest';
import { afterFailure, DEFAULT_RETRY_SCHEDULE_MS, maxAttempts } from '../../../../src/core/webhooks/retry-schedule.js';

describe('the retry schedule (SPEC Events 4)', () => {
  it('gives 6 attempts in total: the first plus 5 retries', () => {
    expect(maxAttempts(DEFAULT_RETRY_SCHEDULE_MS)).toBe(6);
  });

  it.each([
    [1, 60_000],
    [2, 300_000],
    [3, 900_000],
    [4, 3_600_000],
    [5, 14_400_000],
  ])('after failed attempt %i waits %i ms, counted from the failure', (attempts, delay) => {
    expect(afterFailure(attempts, 5_000, DEFAULT_RETRY_SCHEDULE_MS)).toEqual({ state: 'pending', nextAttemptAt: 5_000 + delay });
  });

  it('fails permanently when the sixth attempt fails', () => {
    expect(afterFailure(6, 5_000, DEFAULT_RETRY_SCHEDULE_MS)).toEqual({ state: 'failed' });
  });

  it('adds up to about 5 hours 21 minutes from the first attempt to the last', () => {
    const total = DEFAULT_RETRY_SCHEDULE_MS.reduce((a, b) => a + b, 0);
    expect(total).toBe((5 * 60 + 21) * 60_000);
  });

  it('follows a configured schedule: one retry means two attempts', () => {
    expect(afterFailure(1, 0, [10])).toEqual({ state: 'pending', nextAttemptAt: 10 });
    expect(afterFailure(2, 0, [10])).toEqual({ state: 'failed' });
  });
});
