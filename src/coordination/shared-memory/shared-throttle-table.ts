/**
 * The throttle counters (core/coordination/throttle-port.ts) in memory shared by the worker threads of
 * `serve --workers N` (issue 31): a SharedArrayBuffer the main thread creates and hands every worker, so
 * that a sign-in throttle counts the attempts of every worker, not each worker's own.
 *
 * Unlike the limit counters (shared-counter-table.ts), throttle names are the caller's to choose (one per
 * e-mail tried), so entries must be reusable: the table is SLOTS slots, each a name and a counter of
 * THROTTLE_BUCKETS buckets; a name lives in one of PROBES slots from its hash. A slot whose counter saw
 * nothing for a whole window holds nothing any more (sliding-window.ts) and is taken over in place by a
 * new name: no slot is ever emptied, so probing never needs tombstones. When all PROBES slots of a new
 * name are busy (a flood of distinct names), the name gets a counter private to the asking worker: its
 * throttle then holds per worker (N times in all) until slots go idle. That is logged once.
 *
 * The lock is the limit counters' mutex (the caller passes it): throttles are rare next to admissions,
 * and one lock means the main thread frees it for a dead worker as it does now (workers-launcher.ts).
 */
import { privateThrottleCounters, THROTTLE_BUCKETS, type ThrottleCounterSource } from '../../core/limits/counter-throttles.js';
import { SharedWindowCounter, SlidingWindowCounter } from '../../core/limits/sliding-window.js';
import { fnv1a, nameBytes } from './shared-counter-table.js';
import type { SharedMutex } from './shared-mutex.js';

/** Slots in the table: 8192 x (128 + 1,008) bytes = 9 MiB of address space, committed as touched. */
export const THROTTLE_SLOTS = 8192;
const PROBES = 16;

// Header, in Int32 words.
const MAGIC_WORD = 0;
const SLOT_COUNT = 1;
const HEADER_BYTES = 16;
const MAGIC = 0x5357_5431;

/** One name slot: name length + 1 (0: never used), window ms, then the name's UTF-8 bytes. */
const SLOT_BYTES = 128;
const NAME_OFFSET = 8;

const COUNTER_DOUBLES = SlidingWindowCounter.storageLength(THROTTLE_BUCKETS);

/** A zeroed buffer for `slots` throttle counters, made once by the main thread and passed to each worker. */
export function createSharedThrottleBuffer(slots = THROTTLE_SLOTS): SharedArrayBuffer {
  if (!Number.isInteger(slots) || slots < PROBES) throw new RangeError(`slots must be an integer of at least ${PROBES}`);
  const buffer = new SharedArrayBuffer(HEADER_BYTES + slots * SLOT_BYTES + slots * COUNTER_DOUBLES * 8);
  const header = new Int32Array(buffer, 0, HEADER_BYTES / 4);
  header[SLOT_COUNT] = slots;
  header[MAGIC_WORD] = MAGIC;
  return buffer;
}

export class SharedThrottleTable implements ThrottleCounterSource {
  readonly lock: SharedMutex;
  readonly #names: DataView;
  readonly #nameBytes: Uint8Array;
  readonly #counters: Float64Array;
  readonly #slots: number;
  /** Where names go when their slots are all busy; logged on first use. */
  readonly #overflow = privateThrottleCounters();
  readonly #onFull: (() => void) | undefined;
  #full = false;

  constructor(buffer: SharedArrayBuffer, lock: SharedMutex, onFull?: () => void) {
    const header = new Int32Array(buffer, 0, HEADER_BYTES / 4);
    if (header[MAGIC_WORD] !== MAGIC) throw new TypeError('not a shared throttle buffer (createSharedThrottleBuffer)');
    this.#slots = header[SLOT_COUNT] as number;
    this.#names = new DataView(buffer, HEADER_BYTES, this.#slots * SLOT_BYTES);
    this.#nameBytes = new Uint8Array(buffer, HEADER_BYTES, this.#slots * SLOT_BYTES);
    this.#counters = new Float64Array(buffer, HEADER_BYTES + this.#slots * SLOT_BYTES, this.#slots * COUNTER_DOUBLES);
    this.lock = lock;
    this.#onFull = onFull;
  }

  /**
   * Call with the lock held. The counter returned has seen `now`, so no other name takes its slot over
   * inside the same locked section (a slot is reusable only a window after its latest time).
   */
  counter(name: string, windowMs: number, now: number): SlidingWindowCounter {
    const key = nameBytes(name);
    const start = fnv1a(key) % this.#slots;
    let reusable: number | null = null;
    for (let probe = 0; probe < PROBES; probe++) {
      const slot = (start + probe) % this.#slots;
      const at = slot * SLOT_BYTES;
      const length = this.#names.getInt32(at, true);
      if (length - 1 === key.length && this.#names.getInt32(at + 4, true) === windowMs && this.#sameName(at, key)) return this.#touched(slot, windowMs, now);
      if (reusable === null && (length === 0 || this.#idle(slot, at, now))) reusable = slot;
    }
    if (reusable === null) {
      if (!this.#full) this.#onFull?.();
      this.#full = true;
      return this.#overflow.counter(name, windowMs, now);
    }
    const at = reusable * SLOT_BYTES;
    SlidingWindowCounter.initialize(this.#storage(reusable));
    this.#nameBytes.set(key, at + NAME_OFFSET);
    this.#names.setInt32(at + 4, windowMs, true);
    this.#names.setInt32(at, key.length + 1, true);
    return this.#touched(reusable, windowMs, now);
  }

  #touched(slot: number, windowMs: number, now: number): SlidingWindowCounter {
    const counter = new SharedWindowCounter(windowMs, this.#storage(slot), THROTTLE_BUCKETS);
    counter.count(now);
    return counter;
  }

  #idle(slot: number, at: number, now: number): boolean {
    return SlidingWindowCounter.latestTime(this.#storage(slot)) + this.#names.getInt32(at + 4, true) <= now;
  }

  #storage(slot: number): Float64Array {
    const start = slot * COUNTER_DOUBLES;
    return this.#counters.subarray(start, start + COUNTER_DOUBLES);
  }

  #sameName(at: number, key: Uint8Array): boolean {
    const bytes = this.#nameBytes;
    const from = at + NAME_OFFSET;
    for (let i = 0; i < key.length; i++) if (bytes[from + i] !== key[i]) return false;
    return true;
  }
}
