/**
 * SPEC Events 4 and "Webhook delivery" states: up to 6 attempts (1 plus 5 retries); after the n-th failed
 * attempt the next one is due `schedule[n - 1]` later (1 min, 5 min, 15 min, 1 h, 4 h); a failure with no
 * retry left is permanent. The schedule is configurable (tests shorten nothing: they move the clock).
 */

export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = [60_000, 300_000, 900_000, 3_600_000, 14_400_000];

export type AfterFailure = { readonly state: 'pending'; readonly nextAttemptAt: number } | { readonly state: 'failed' };

/** `attemptsMade` counts the attempt that just failed; `failedAt` is when it did (Unix ms). */
export function afterFailure(attemptsMade: number, failedAt: number, schedule: readonly number[]): AfterFailure {
  const delay = schedule[attemptsMade - 1];
  return delay === undefined ? { state: 'failed' } : { state: 'pending', nextAttemptAt: failedAt + delay };
}

/** Total attempts a delivery gets: the first plus one per scheduled retry. */
export function maxAttempts(schedule: readonly number[]): number {
  return schedule.length + 1;
}
