/**
 * Throttling of failed sign-in and second-factor attempts, per account and per client address (issue 22;
 * SPEC Authentication 13). A key may fail its limit's number of times within `windowMs`; past that it is refused until
 * the oldest failure leaves the window. Success does not reset an address (one address may try many
 * accounts), but does reset the account. In memory: a restart forgets, which an attacker cannot cause.
 */

export interface Throttle {
  /** Milliseconds until `key` may try again, 0 when it may now. */
  waitMs(key: string): number;
  fail(key: string): void;
  reset(key: string): void;
}

/** Limits for keys `account:...` and `address:...` (an address may serve many people, behind one NAT). */
export interface ThrottleLimits {
  readonly account: number;
  readonly address: number;
  readonly windowMs: number;
}

export function createThrottle(limits: ThrottleLimits, now: () => number): Throttle {
  const { windowMs } = limits;
  const limitOf = (key: string): number => (key.startsWith('address:') ? limits.address : limits.account);
  const failures = new Map<string, number[]>();
  const recent = (key: string, at: number): number[] => {
    const kept = (failures.get(key) ?? []).filter((t) => at - t < windowMs);
    if (kept.length === 0) failures.delete(key);
    else failures.set(key, kept);
    return kept;
  };
  return {
    waitMs(key) {
      const at = now();
      const kept = recent(key, at);
      const limit = limitOf(key);
      if (kept.length < limit) return 0;
      return windowMs - (at - (kept[kept.length - limit] ?? at));
    },
    fail(key) {
      const at = now();
      const kept = recent(key, at);
      kept.push(at);
      failures.set(key, kept.slice(-limitOf(key) * 2));
      // A flood of distinct keys (random e-mails) must not grow memory without bound.
      if (failures.size > 100_000) failures.delete(failures.keys().next().value ?? '');
    },
    reset(key) {
      failures.delete(key);
    },
  };
}
