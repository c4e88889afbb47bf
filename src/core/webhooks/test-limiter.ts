/**
 * SPEC Limits: 10 test deliveries per webhook per hour, a sliding window kept in memory (like the other
 * rate counters: ARCHITECTURE "State"). A refusal is 429 with retry_after, retry_strategy and Retry-After
 * (SPEC "Errors"), the wait being until the oldest test in the window leaves it.
 */
import { retryStrategy, tooManyRequests } from '../limits/limit-headers.js';

export const TEST_DELIVERIES_PER_HOUR = 10;
const WINDOW_MS = 3_600_000;

export function createTestDeliveryLimiter(limit = TEST_DELIVERIES_PER_HOUR, windowMs = WINDOW_MS) {
  const sent = new Map<string, number[]>();
  return {
    /** Counts a test of `webhookId` at `now`, or throws 429 webhook_test_limit_exceeded. */
    admit(webhookId: string, now: number): void {
      const recent = (sent.get(webhookId) ?? []).filter((t) => t > now - windowMs);
      if (recent.length >= limit) {
        const retryAfter = Math.max(1, Math.ceil(((recent[0] ?? now) + windowMs - now) / 1000));
        sent.set(webhookId, recent);
        throw tooManyRequests(
          'webhook_test_limit_exceeded',
          `Test deliveries are limited to ${limit} per webhook per hour; retry in ${retryAfter} s.`,
          retryAfter,
          retryStrategy('fixed', retryAfter),
        );
      }
      recent.push(now);
      sent.set(webhookId, recent);
    },
    forget(webhookId: string): void {
      sent.delete(webhookId);
    },
  };
}
