/**
 * A sliding-window counter: a ring of sub-buckets (docs/decisions.md "Rate limits: the algorithm").
 *
 * The window of W ms is cut into N buckets of W/N ms, and each bucket remembers the time of its latest
 * unit. A bucket leaves the window W ms after that latest unit, so every unit in it is counted for at
 * least W and at most W/N longer. Hence:
 *   - no interval of W ms ever holds more admitted units than the limit (no fixed-window double burst);
 *   - a unit is released at most W/N late (N = 600: 100 ms late on a 60 s window, 0.17% of it);
 *   - the wait until the oldest bucket leaves is never more than W, since its latest unit is not in the
 *     future. A refusal can therefore always say "retry in at most 60 s" and be right (issue 21: a bucket
 *     that left at its grid end, W + W/N after its start, made the first 429 of a window say 61 s, which
 *     the common clients refuse to wait for).
 * A bucket's leaving time falls inside bucket index + N, so the ring holds N + 1 buckets: the N before
 * the current one and the current one, the oldest of them dropped as soon as its time has come.
 * Memory is fixed (2 x (N + 1) doubles) whatever the limit, and every operation is O(1) amortized: the
 * ring only moves forward, one bucket per elapsed W/N, and an idle gap longer than the window clears it in
 * one fill. Time comes from the caller (the injectable clock); a clock that steps back is treated as
 * standing.
 *
 * Storage (issue 12): the whole state fits one Float64Array of storageLength(N) doubles, so this one
 * algorithm runs over a counter private to this thread (the default) or over a view into a
 * SharedArrayBuffer shared by the worker threads of `serve --workers N` (src/coordination/shared-memory/).
 * The ring is used in place. The four scalars are class fields, which SharedWindowCounter loads from the
 * storage before each call and stores back after it: scalars read through a typed array, or a branch on
 * "shared?" in each call, cost the private counter 20-30% per call in a micro-bench, while a subclass
 * costs it nothing (its call sites only ever see this class). Callers sharing a storage serialize every
 * call (one lock, held across the whole admission).
 */

/** Buckets per window. */
export const BUCKETS_PER_WINDOW = 600;

/** The scalars' place in the storage, before the ring's unit counts and each slot's latest time. */
const HEAD = 0;
const TAIL = 1;
const TOTAL = 2;
const NOW = 3;
const SCALARS = 4;

export class SlidingWindowCounter {
  readonly windowMs: number;
  readonly #n: number;
  readonly #slots: Float64Array;
  /** Per slot, the time of the latest unit added to it; meaningless while the slot holds 0. */
  readonly #latest: Float64Array;
  /** Absolute index of the newest bucket (floor(t * N / W)). */
  #head = 0;
  /** Absolute index at or before the oldest non-empty counted bucket; only moves forward. */
  #tail = 0;
  #total = 0;
  /** The latest time seen: a clock that steps back reads as this one. */
  #now = -Infinity;

  /** Doubles of storage a counter of `buckets` buckets needs. */
  static storageLength(buckets = BUCKETS_PER_WINDOW): number {
    return SCALARS + 2 * (buckets + 1);
  }

  /** Sets storage (zeroed or reused) to an empty counter, once, before the first counter views it. */
  static initialize(storage: Float64Array): void {
    storage.fill(0);
    storage[NOW] = -Infinity;
  }

  /**
   * The latest time the counter in `storage` saw (-Infinity when new): every unit it holds has left the
   * window once W has passed since, so a table may reuse the storage (shared-throttle-table.ts).
   */
  static latestTime(storage: Float64Array): number {
    return storage[NOW] as number;
  }

  /** `storage`: the ring's place (SharedWindowCounter); absent: a private one. */
  constructor(windowMs: number, buckets = BUCKETS_PER_WINDOW, storage?: Float64Array) {
    if (!(windowMs > 0) || !Number.isInteger(buckets) || buckets < 1) throw new RangeError('window and buckets must be positive');
    const length = SlidingWindowCounter.storageLength(buckets);
    if (storage !== undefined && storage.length !== length) throw new RangeError(`storage must hold ${length} doubles`);
    this.windowMs = windowMs;
    this.#n = buckets;
    const all = storage ?? new Float64Array(length);
    this.#slots = all.subarray(SCALARS, SCALARS + buckets + 1);
    this.#latest = all.subarray(SCALARS + buckets + 1);
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
    this.#latest[slot] = this.#now;
    this.#total += n;
  }

  /**
   * Milliseconds until the oldest counted unit leaves the window (0 when nothing is counted): at most the
   * window, reached when the oldest bucket's latest unit was added at this very moment.
   */
  msUntilOldestLeaves(now: number): number {
    this.#advance(now);
    if (this.#total <= 0) return 0;
    const size = this.#slots.length;
    while (this.#tail < this.#head && this.#slots[this.#tail % size] === 0) this.#tail += 1;
    return Math.max(0, (this.#latest[this.#tail % size] ?? 0) + this.windowMs - this.#now);
  }

  /**
   * Takes back up to `n` units added at `at` (a throttle reservation given back, core/limits/throttles.ts):
   * from the bucket `at` fell in, or the first non-empty one after it (where an add lands when the clock
   * stood), if still counted. Exact while the reservation's bucket is in the window; nothing once it left.
   */
  remove(at: number, now: number, n = 1): void {
    this.#advance(now);
    const slots = this.#slots;
    const size = slots.length;
    for (let i = Math.max(Math.floor((at * this.#n) / this.windowMs), this.#head - this.#n); i <= this.#head; i++) {
      const units = slots[i % size] ?? 0;
      if (units > 0) {
        const taken = Math.min(units, n);
        slots[i % size] = units - taken;
        this.#total -= taken;
        this.#clampDrift();
        return;
      }
    }
  }

  /** Forgets every unit (a throttle's account reset after a success). */
  clear(now: number): void {
    this.#advance(now);
    this.#slots.fill(0);
    this.#total = 0;
  }

  #advance(now: number): void {
    // Only the passing of time releases anything (adds go to the newest bucket, never the oldest).
    if (!(now > this.#now)) return;
    this.#now = now;
    const index = Math.floor((now * this.#n) / this.windowMs);
    const head = this.#head;
    const slots = this.#slots;
    const size = slots.length;
    if (index > head) {
      if (index - head >= size) {
        slots.fill(0);
        this.#total = 0;
      } else {
        // Each new bucket reuses the slot of one whose time has passed (it left during its N-th successor).
        for (let i = head + 1; i <= index; i++) {
          const slot = i % size;
          this.#total -= slots[slot] ?? 0;
          slots[slot] = 0;
        }
        this.#clampDrift();
      }
      this.#head = index;
      if (this.#tail < index - this.#n) this.#tail = index - this.#n;
    }
    // The oldest bucket in the ring leaves during the current one, once W has passed since its latest unit.
    const oldest = (index + 1) % size;
    const units = slots[oldest] ?? 0;
    if (units !== 0 && (this.#latest[oldest] ?? 0) + this.windowMs <= now) {
      this.#total -= units;
      slots[oldest] = 0;
      this.#clampDrift();
    }
  }

  /** Guards against drift from adding and subtracting fractional units. */
  #clampDrift(): void {
    if (this.#total < 1e-9) this.#total = 0;
  }

  /** The scalars from `storage` (SharedWindowCounter, before each call). */
  protected loadScalars(storage: Float64Array): void {
    this.#head = storage[HEAD] as number;
    this.#tail = storage[TAIL] as number;
    this.#total = storage[TOTAL] as number;
    this.#now = storage[NOW] as number;
  }

  /** The scalars into `storage` (SharedWindowCounter, after each call). */
  protected storeScalars(storage: Float64Array): void {
    storage[HEAD] = this.#head;
    storage[TAIL] = this.#tail;
    storage[TOTAL] = this.#total;
    storage[NOW] = this.#now;
  }
}

/**
 * The same counter over storage that other threads use too: each call loads the scalars another thread
 * may have moved and stores them back. The caller holds the lock that serializes every thread's calls.
 */
export class SharedWindowCounter extends SlidingWindowCounter {
  readonly #storage: Float64Array;

  /** `storage`: storageLength(buckets) doubles, set once with SlidingWindowCounter.initialize. */
  constructor(windowMs: number, storage: Float64Array, buckets = BUCKETS_PER_WINDOW) {
    super(windowMs, buckets, storage);
    this.#storage = storage;
  }

  override count(now: number): number {
    this.loadScalars(this.#storage);
    const count = super.count(now);
    this.storeScalars(this.#storage);
    return count;
  }

  override add(now: number, n = 1): void {
    this.loadScalars(this.#storage);
    super.add(now, n);
    this.storeScalars(this.#storage);
  }

  override remove(at: number, now: number, n = 1): void {
    this.loadScalars(this.#storage);
    super.remove(at, now, n);
    this.storeScalars(this.#storage);
  }

  override clear(now: number): void {
    this.loadScalars(this.#storage);
    super.clear(now);
    this.storeScalars(this.#storage);
  }

  override msUntilOldestLeaves(now: number): number {
    this.loadScalars(this.#storage);
    const wait = super.msUntilOldestLeaves(now);
    this.storeScalars(this.#storage);
    return wait;
  }
}
