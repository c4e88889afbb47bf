/**
 * The limiter's counters in memory shared by the worker threads of `serve --workers N` (issue 12): a
 * SharedArrayBuffer the main thread creates and hands every worker, holding
 *   - a header: the mutex (shared-mutex.ts), the number of counters allocated, the capacity;
 *   - an open-addressing hash table (linear probing, twice as many slots as counters, so a probe is short)
 *     from a counter's name (`project:<id>:inference`, `key:<id>:<window ms>`, ...) to its index;
 *   - the counters themselves, each the storage of one sliding-window counter (core/limits/sliding-window.ts:
 *     the one algorithm, here over shared storage).
 * One mutex guards all of it: RateLimiter holds it across a whole admission (project, key quota and token
 * counters checked then consumed together) and allocation happens inside that, so no thread ever sees a
 * half-made entry and no interleaving of threads can admit past a ceiling.
 *
 * Capacity is fixed at creation (the buffer cannot grow) and entries are never freed (a key's quota
 * counter outlives the key; a changed quota window is a new name). When the table is full, a new name gets
 * a counter private to the asking thread instead: its limit then holds per worker, not across them (up to
 * N times the limit in all). That is logged once per name and reported by /readyz, and is the lesser evil
 * against refusing traffic; the capacity is sized from the config at start (workers-launcher.ts) with
 * room for keys created later. A counter is 9.4 KiB (601 buckets x 2 doubles); the operating system
 * commits only the pages touched, so unused capacity costs address space, not memory.
 */
import { createHash } from 'node:crypto';
import type { DependencyHealth } from '../../core/coordination/admission-port.js';
import type { CounterSource } from '../../core/limits/rate-limiter.js';
import { BUCKETS_PER_WINDOW, SharedWindowCounter, SlidingWindowCounter } from '../../core/limits/sliding-window.js';
import { SharedMutex } from './shared-mutex.js';

// Header, in Int32 words.
const LOCK = 0;
const OWNER = 1;
const ALLOCATED = 2;
const CAPACITY = 3;
const SLOT_COUNT = 4;
const MAGIC_WORD = 5;
const HEADER_BYTES = 32;
const MAGIC = 0x5357_4331;

/** One hash slot: name length + 1 (0: empty), counter index, then the name's UTF-8 bytes. */
const SLOT_BYTES = 128;
const NAME_OFFSET = 8;
const MAX_NAME_BYTES = SLOT_BYTES - NAME_OFFSET;

const COUNTER_DOUBLES = SlidingWindowCounter.storageLength(BUCKETS_PER_WINDOW);

/** A zeroed buffer for `capacity` counters, made once by the main thread and passed to each worker. */
export function createSharedCounterBuffer(capacity: number): SharedArrayBuffer {
  if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('capacity must be a positive integer');
  const slotCount = 2 * capacity;
  const buffer = new SharedArrayBuffer(HEADER_BYTES + slotCount * SLOT_BYTES + capacity * COUNTER_DOUBLES * 8);
  const header = new Int32Array(buffer, 0, HEADER_BYTES / 4);
  header[CAPACITY] = capacity;
  header[SLOT_COUNT] = slotCount;
  header[MAGIC_WORD] = MAGIC;
  return buffer;
}

export interface SharedCounterTableOptions {
  /** This thread's tag for the mutex: worker index + 1. */
  readonly tag: number;
  /** Called once per name that got a private counter because the table was full. */
  readonly onFull?: (name: string, capacity: number) => void;
}

export class SharedCounterTable implements CounterSource {
  readonly lock: SharedMutex;
  readonly #header: Int32Array;
  readonly #slots: DataView;
  readonly #slotBytes: Uint8Array;
  readonly #counters: Float64Array;
  readonly #capacity: number;
  readonly #slotCount: number;
  readonly #onFull: ((name: string, capacity: number) => void) | undefined;
  #privateCounters = 0;

  constructor(buffer: SharedArrayBuffer, options: SharedCounterTableOptions) {
    this.#header = new Int32Array(buffer, 0, HEADER_BYTES / 4);
    if (this.#header[MAGIC_WORD] !== MAGIC) throw new TypeError('not a shared counter buffer (createSharedCounterBuffer)');
    this.#capacity = this.#header[CAPACITY] as number;
    this.#slotCount = this.#header[SLOT_COUNT] as number;
    this.#slots = new DataView(buffer, HEADER_BYTES, this.#slotCount * SLOT_BYTES);
    this.#slotBytes = new Uint8Array(buffer, HEADER_BYTES, this.#slotCount * SLOT_BYTES);
    this.#counters = new Float64Array(buffer, HEADER_BYTES + this.#slotCount * SLOT_BYTES, this.#capacity * COUNTER_DOUBLES);
    this.lock = new SharedMutex(this.#header, LOCK, OWNER, options.tag);
    this.#onFull = options.onFull;
  }

  /** Call with the lock held (RateLimiter asks inside an admission or a charge). */
  counter(name: string, windowMs: number): SlidingWindowCounter {
    const index = this.#indexOf(name);
    if (index === null) {
      this.#privateCounters += 1;
      this.#onFull?.(name, this.#capacity);
      return new SlidingWindowCounter(windowMs);
    }
    const start = index * COUNTER_DOUBLES;
    return new SharedWindowCounter(windowMs, this.#counters.subarray(start, start + COUNTER_DOUBLES));
  }

  /** Counters allocated in the table, by every thread. */
  get allocated(): number {
    return Atomics.load(this.#header, ALLOCATED);
  }

  readonly health = (): DependencyHealth => {
    const allocated = this.allocated;
    const full = this.#privateCounters > 0;
    return {
      name: 'shared_counters',
      // Full is reported, not made "not ready": taking this instance out would not free a counter.
      ok: true,
      detail: full ? `full (${this.#capacity}): ${this.#privateCounters} limits on this worker count per worker` : `${allocated} of ${this.#capacity} counters`,
    };
  };

  /** The counter's index, allocating it if new; null when the table is full. */
  #indexOf(name: string): number | null {
    const key = nameBytes(name);
    const slots = this.#slotCount;
    let slot = fnv1a(key) % slots;
    for (let probes = 0; probes < slots; probes++) {
      const at = slot * SLOT_BYTES;
      const length = this.#slots.getInt32(at, true);
      if (length === 0) return this.#allocate(at, key);
      if (length - 1 === key.length && this.#sameName(at, key)) return this.#slots.getInt32(at + 4, true);
      slot = (slot + 1) % slots;
    }
    return null;
  }

  #allocate(at: number, key: Uint8Array): number | null {
    const index = this.#header[ALLOCATED] as number;
    if (index >= this.#capacity) return null;
    const start = index * COUNTER_DOUBLES;
    SlidingWindowCounter.initialize(this.#counters.subarray(start, start + COUNTER_DOUBLES));
    this.#slotBytes.set(key, at + NAME_OFFSET);
    this.#slots.setInt32(at + 4, index, true);
    this.#slots.setInt32(at, key.length + 1, true);
    Atomics.store(this.#header, ALLOCATED, index + 1);
    return index;
  }

  #sameName(at: number, key: Uint8Array): boolean {
    const bytes = this.#slotBytes;
    const from = at + NAME_OFFSET;
    for (let i = 0; i < key.length; i++) if (bytes[from + i] !== key[i]) return false;
    return true;
  }
}

const encoder = new TextEncoder();

/** A name as stored: its UTF-8, or a digest of it when longer than a slot holds (ids are short in practice). */
export function nameBytes(name: string): Uint8Array {
  const bytes = encoder.encode(name);
  if (bytes.length <= MAX_NAME_BYTES) return bytes;
  return encoder.encode(`#${createHash('sha256').update(bytes).digest('base64url')}`);
}

/** 32-bit FNV-1a. */
export function fnv1a(bytes: Uint8Array): number {
  let hash = 0x811c9dc5;
  for (const byte of bytes) hash = Math.imul(hash ^ byte, 0x01000193);
  return hash >>> 0;
}
