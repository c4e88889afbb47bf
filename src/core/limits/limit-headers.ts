/**
 * What a limiter decision looks like on the wire (SPEC Limits 5 and "Errors"): the RateLimit header set
 * on every response of a project, and the 429 errors with `retry_after`, `retry_strategy` and Retry-After.
 */
import { GatewayError, type ErrorCode } from '../../errors.js';
import type { LimitView, Refusal } from './rate-limiter.js';

/** SPEC Limits 5: the warning shows at or below 20% of the limit remaining, 0 included. */
export const WARNING_FRACTION = 0.2;

export type SetHeader = (name: string, value: string) => void;

/** Writes nothing for an unmetered view (SPEC Limits 4: the numeric headers are omitted). */
export function writeRateLimitHeaders(view: LimitView | null, set: SetHeader): void {
  if (!view) return;
  const limit = String(view.limit);
  const remaining = String(view.remaining);
  const reset = String(view.resetSeconds);
  set('RateLimit-Limit', limit);
  set('RateLimit-Remaining', remaining);
  set('RateLimit-Reset', reset);
  set('X-RateLimit-Limit', limit);
  set('X-RateLimit-Remaining', remaining);
  set('X-RateLimit-Reset', reset);
  if (view.remaining <= view.limit * WARNING_FRACTION) set('X-RateLimit-Warning', 'approaching_limit');
}

export interface RetryStrategy {
  readonly type: 'exponential' | 'fixed';
  readonly initial_delay_ms: number;
  readonly max_delay_ms: number;
  readonly multiplier: number;
  readonly jitter: boolean;
}

/**
 * Request ceilings: wait `retry_after`, then back off exponentially with jitter (SPEC Limits 5), capped
 * at one window. Token ceilings and budgets: a fixed wait, since retrying sooner cannot succeed.
 */
export function retryStrategy(kind: 'requests' | 'fixed', retryAfterSeconds: number, windowSeconds = 60): RetryStrategy {
  const initial = retryAfterSeconds * 1000;
  return kind === 'requests'
    ? { type: 'exponential', initial_delay_ms: initial, max_delay_ms: Math.max(initial, windowSeconds * 1000), multiplier: 2, jitter: true }
    : { type: 'fixed', initial_delay_ms: initial, max_delay_ms: initial, multiplier: 1, jitter: true };
}

/** Any 429 of ours: `retry_after` and `retry_strategy` inside `error`, plus Retry-After. */
export function tooManyRequests(code: ErrorCode, message: string, retryAfterSeconds: number, strategy: RetryStrategy): GatewayError {
  return new GatewayError(code, {
    message,
    extra: { retry_after: retryAfterSeconds, retry_strategy: strategy },
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });
}

export function refusalError(refusal: Refusal): GatewayError {
  if (refusal.kind === 'tokens') {
    return tooManyRequests(
      'token_rate_limit_exceeded',
      `The project's token rate limit (${refusal.limit} tokens per minute) is reached; retry in ${refusal.retryAfterSeconds} s.`,
      refusal.retryAfterSeconds,
      retryStrategy('fixed', refusal.retryAfterSeconds),
    );
  }
  const what =
    refusal.by === 'key'
      ? `The API key's quota of ${refusal.limit} requests per ${refusal.windowSeconds} s`
      : `The project's rate limit of ${refusal.limit} requests per ${refusal.windowSeconds} s`;
  return tooManyRequests(
    'rate_limit_exceeded',
    `${what} is reached; retry in ${refusal.retryAfterSeconds} s.`,
    refusal.retryAfterSeconds,
    retryStrategy('requests', refusal.retryAfterSeconds, refusal.windowSeconds),
  );
}
