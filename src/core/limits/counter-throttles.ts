/**
 * The throttle port (core/coordination/throttle-port.ts) over sliding-window counters (sliding-window.ts):
 * private to this thread by default, or in the shared memory of `serve --workers N`
 * (src/coordination/shared-memory/shared-throttle-table.ts). A reservation is check-then-consume over
 * every counter named with no await in between, under the source's lock when the counters are shared,
 * so no interleaving of requests or threads admits past a limit.
 */
import type { ThrottleCounter, ThrottlePort, ThrottleVerdict } from '../coordination/throttle-port.js';
import { SlidingWindowCounter } from './sliding-window.js';

/**
 * Buckets per throttle window: a unit leaves at most W/60 late (15 s on the 15-minute sign-in window),
 * and a counter is 1 KiB instead of the 9.4 KiB of a request limit's 600 buckets: throttles are many
 * (one per e-mail tried) and coarse.
 */
export const THROTTLE_BUCKETS = 60;

/** Counters this thread keeps at most, least recently used dropped first (a flood of random e-mails). */
export const PRIVATE_THROTTLE_CAPACITY = 20_000;

/** Where the counters live. A name has one window (see the port); `counter` is asked inside the lock. */
export interface ThrottleCounterSource {
  counter(name: string, windowMs: number, now: number): SlidingWindowCounter;
  /** Shared counters: held across each whole reservation, release or reset. Absent: private, no lock. */
  readonly lock?: { acquire(): void; release(): void };
}

/**
 * Counters private to this thread, least recently used dropped past `capacity`. Dropping one forgets its
 * failures; pushing a watched account's counter out takes `capacity` fresh names between two of its
 * attempts, which the per-address limits make slow.
 */
export function privateThrottleCounters(capacity = PRIVATE_THROTTLE_CAPACITY): ThrottleCounterSource {
  const counters = new Map<string, SlidingWindowCounter>();
  return {
    counter(name, windowMs) {
      let counter = counters.get(name);
      if (counter !== undefined && counter.windowMs === windowMs) {
        counters.delete(name);
      } else {
        counter = new SlidingWindowCounter(windowMs, THROTTLE_BUCKETS);
        if (counters.size >= capacity) counters.delete(counters.keys().next().value ?? '');
      }
      counters.set(name, counter);
      return counter;
    },
  };
}

export class CounterThrottles implements ThrottlePort {
  readonly #source: ThrottleCounterSource;

  constructor(source: ThrottleCounterSource = privateThrottleCounters()) {
    this.#source = source;
  }

  reserve(counters: readonly ThrottleCounter[], windowMs: number, now: number): Promise<ThrottleVerdict> {
    return Promise.resolve(this.reserveNow(counters, windowMs, now));
  }

  /** The reservation itself, synchronous: it is done when this returns (the Redis fallback calls it too). */
  reserveNow(counters: readonly ThrottleCounter[], windowMs: number, now: number): ThrottleVerdict {
    return this.#locked(() => {
      const found = counters.map((c) => ({ limit: c.limit, counter: this.#source.counter(c.name, windowMs, now) }));
      let full = false;
      let waitMs = 0;
      for (const { limit, counter } of found) {
        if (counter.count(now) < limit) continue;
        full = true;
        waitMs = Math.max(waitMs, counter.msUntilOldestLeaves(now));
      }
      if (full) return { admitted: false, waitMs };
      for (const { counter } of found) counter.add(now);
      return { admitted: true, at: now };
    });
  }

  release(name: string, windowMs: number, at: number, now: number): Promise<void> {
    this.releaseNow(name, windowMs, at, now);
    return Promise.resolve();
  }

  releaseNow(name: string, windowMs: number, at: number, now: number): void {
    this.#locked(() => this.#source.counter(name, windowMs, now).remove(at, now));
  }

  reset(name: string, windowMs: number, now: number): Promise<void> {
    this.resetNow(name, windowMs, now);
    return Promise.resolve();
  }

  resetNow(name: string, windowMs: number, now: number): void {
    this.#locked(() => this.#source.counter(name, windowMs, now).clear(now));
  }

  #locked<T>(run: () => T): T {
    const lock = this.#source.lock;
    if (lock === undefined) return run();
    lock.acquire();
    try {
      return run();
    } finally {
      lock.release();
    }
  }
}
