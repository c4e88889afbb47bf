/**
 * The throttle port (issue 31): named attempt counters for the guards outside SPEC "Limits" (failed
 * sign-ins and second factors per account and per address, OpenID Connect starts per address, agent
 * connections) and for SPEC's hourly webhook test deliveries (core/webhooks/test-limiter.ts), kept where
 * the rate limits live so that they hold across the worker threads of `serve --workers N` and across
 * replicas: in this process (the default), in the workers' shared memory, or in Redis
 * (src/coordination/coordination.ts picks one).
 *
 * An attempt is reserved before the work it guards (a password hash, a flow row), never counted after
 * it: `reserve` checks every counter named and, only when none is at its limit, takes one unit from each,
 * atomically in every implementation. So N concurrent attempts admit at most `limit` of them, whichever
 * thread or replica each lands on. A success gives its unit back (`release`) or clears a counter (`reset`).
 *
 * One name always has one window (names carry the throttle they belong to). Names are short (callers
 * digest long values: an e-mail is the attacker's to choose).
 */

export interface ThrottleCounter {
  readonly name: string;
  /** Units allowed in the window. */
  readonly limit: number;
}

export type ThrottleVerdict =
  /** Admitted: one unit taken from each counter at `at` (pass it to `release`). */
  | { readonly admitted: true; readonly at: number }
  /** Refused, nothing taken: a counter is at its limit until `waitMs` from now. */
  | { readonly admitted: false; readonly waitMs: number; readonly unavailable?: false }
  /**
   * Refused because the shared counters cannot be reached and `coordination.on_outage` is fail_closed
   * (Redis only): the caller answers 503.
   */
  | { readonly admitted: false; readonly waitMs: number; readonly unavailable: true };

export interface ThrottlePort {
  reserve(counters: readonly ThrottleCounter[], windowMs: number, now: number): Promise<ThrottleVerdict>;
  /** Gives back the unit `reserve` took from `name` at `at`. Never throws (a lost release is one unit too many). */
  release(name: string, windowMs: number, at: number, now: number): Promise<void>;
  /** Forgets every unit of `name`. Never throws. */
  reset(name: string, windowMs: number, now: number): Promise<void>;
}
