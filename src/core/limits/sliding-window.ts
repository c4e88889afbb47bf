/**
 * A sliding-window counter: a ring of sub-buckets (docs/decisions.md "Rate limits: the algorithm").
 *
 * The window of W ms is cut into N buckets of W/N ms. The counter sums the current, partial bucket and
 * the N whole buckets before it, so a unit added at time t stays counted until the end of the bucket that
 * holds t + W: never less than W, at most W/N more. Hence:
 *   - no interval of W ms ever holds more admitted units than the limit (no fixed-window double burst);
 *   - a unit is released at most W/N late (N = 600: 100 ms late on a 60 s window, 0.17% of it).
 * Memory is fixed (N + 1 doubles) whatever the limit, and every operation is O(1) amortized: the ring
 * only moves forward, one bucket per elapsed W/N, and an idle gap longer than the window clears it in one
 * fill. Time comes from the caller (the injectable clock); a clock that steps back is treated as standing.
 */

/** Buckets per window. */
export const BUCKETS_PER_WINDOW = 600;

export class SlidingWindowCounter {
  readonly windowMs: number;
  readonly #n: number;
  readonly #slots: Float64Array;
  /** Absolute index of the newest bucket (floor(t * N / W)). */
  #head = 0;
  /** Absolute index at or before the oldest non-empty counted bucket; only moves forward. */
  #tail = 0;
  #total = 0;

  constructor(windowMs: number, buckets = BUCKETS_PER_WINDOW) {
    if (!(windowMs > 0) || !Number.isInteger(buckets) || buckets < 1) throw new RangeError('window and buckets must be positive');
    this.windowMs = windowMs;
    this.#n = buckets;
    this.#slots = new Float64Array(buckets + 1);
  }

  /** Units counted in the window ending now. */
  count(now: number): number {
    this.#advance(now);
    return this.#total;
  }

  /** Adds `n` units (1 request, or the tokens of a turn) at `now`. */
  add(now: number, n = 1): void {
    this.#advance(now);
    const slot = this.#head % this.#slots.length;
    this.#slots[slot] = (this.#slots[slot] ?? 0) + n;
    this.#total += n;
  }

  /** Milliseconds until the oldest counted unit leaves the window (0 when nothing is counted). */
  msUntilOldestLeaves(now: number): number {
    this.#advance(now);
    if (this.#total <= 0) return 0;
    const size = this.#slots.length;
    while (this.#tail < this.#head && this.#slots[this.#tail % size] === 0) this.#tail += 1;
    // Bucket i is counted while head <= i + N, so it leaves when the clock reaches bucket i + N + 1.
    const leavesAt = Math.ceil(((this.#tail + this.#n + 1) * this.windowMs) / this.#n);
    return Math.max(0, leavesAt - now);
  }

  #advance(now: number): void {
    const index = Math.floor((now * this.#n) / this.windowMs);
    const head = this.#head;
    if (index <= head) return;
    const size = this.#slots.length;
    if (index - head >= size) {
      this.#slots.fill(0);
      this.#total = 0;
    } else {
      // Each new bucket reuses the slot of the bucket that just left the window.
      for (let i = head + 1; i <= index; i++) {
        const slot = i % size;
        this.#total -= this.#slots[slot] ?? 0;
        this.#slots[slot] = 0;
      }
      // Guards against drift from adding and subtracting fractional units.
      if (this.#total < 1e-9) this.#total = 0;
    }
    this.#head = index;
    if (this.#tail < index - this.#n) this.#tail = index - this.#n;
  }
}
