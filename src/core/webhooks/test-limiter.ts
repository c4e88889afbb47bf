/**
 * SPEC Limits: 10 test deliveries per webhook per hour. A refusal is 429 webhook_test_limit_exceeded with
 * retry_after, retry_strategy and Retry-After (SPEC "Errors"), the wait being until the oldest tests in the
 * window leave it.
 *
 * The count is the deployment's, not the process's ("one deployment, one truth"): it is kept on the
 * throttle port (core/coordination/throttle-port.ts), where the rate limits live: in this process, in the
 * shared memory of `serve --workers N`, or in Redis across replicas. A test is reserved before it is sent,
 * atomically, so concurrent tests on any worker or replica admit at most the limit, and a refused one takes
 * nothing. Its counter has 60 buckets of a minute (counter-throttles.ts): a test is counted for an hour
 * and at most a minute more. With Redis unreachable, `coordination.on_outage` decides: fail_open counts
 * on this replica (the limit then holds per replica), fail_closed refuses with 503 limits_unavailable.
 */
import { GatewayError } from '../../errors.js';
import type { ThrottlePort } from '../coordination/throttle-port.js';
import { retryStrategy, tooManyRequests } from '../limits/limit-headers.js';

export const TEST_DELIVERIES_PER_HOUR = 10;
const WINDOW_MS = 3_600_000;

export interface TestDeliveryLimiter {
  /** Counts a test of `webhookId` at `now`, or throws 429 webhook_test_limit_exceeded (503 limits_unavailable). */
  admit(webhookId: string, now: number): Promise<void>;
}

export function createTestDeliveryLimiter(throttles: ThrottlePort, limit = TEST_DELIVERIES_PER_HOUR): TestDeliveryLimiter {
  return {
    async admit(webhookId, now) {
      // Webhook ids are the gateway's UUIDs, never reused: a deleted endpoint's counter just runs out
      // (its Redis key expires, its shared slot is taken over once idle for the window).
      const verdict = await throttles.reserve([{ name: `webhook-test:${webhookId}`, limit }], WINDOW_MS, now);
      if (verdict.admitted) return;
      if (verdict.unavailable === true) {
        throw new GatewayError('limits_unavailable', {
          message: 'The shared rate limiter is unreachable, and test deliveries are refused while it is (coordination.on_outage: fail_closed); retry shortly.',
        });
      }
      const retryAfter = Math.max(1, Math.ceil(verdict.waitMs / 1000));
      throw tooManyRequests(
        'webhook_test_limit_exceeded',
        `Test deliveries are limited to ${limit} per webhook per hour; retry in ${retryAfter} s.`,
        retryAfter,
        retryStrategy('fixed', retryAfter),
      );
    },
  };
}
