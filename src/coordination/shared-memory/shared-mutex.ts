/**
 * A mutex over one Int32 of a SharedArrayBuffer, for the worker threads of one process (issue 12). The
 * three-state lock of Drepper's "Futexes Are Tricky": 0 free, 1 held, 2 held with waiters. Uncontended,
 * acquire and release are one atomic instruction each and never enter the kernel; a thread that finds it
 * held sleeps in Atomics.wait until the holder's release wakes one waiter.
 *
 * The holder's tag is kept beside the lock word, so that when a worker thread dies (terminated, or a bug
 * between acquire and release) the main thread can free a lock it would otherwise hold for ever
 * (releaseIfHeldBy). Critical sections are a few counter operations: microseconds.
 */
const FREE = 0;
const HELD = 1;
const CONTENDED = 2;

export class SharedMutex {
  readonly #words: Int32Array;
  readonly #lock: number;
  readonly #owner: number;
  /** This thread's tag (worker index + 1; 0 is "nobody"). */
  readonly #tag: number;

  /** `words[lockIndex]` is the lock word, `words[ownerIndex]` the holder's tag. */
  constructor(words: Int32Array, lockIndex: number, ownerIndex: number, tag: number) {
    if (!(words.buffer instanceof SharedArrayBuffer)) throw new TypeError('a shared mutex needs a SharedArrayBuffer');
    if (!(tag > 0)) throw new RangeError('a mutex holder tag is positive');
    this.#words = words;
    this.#lock = lockIndex;
    this.#owner = ownerIndex;
    this.#tag = tag;
  }

  acquire(): void {
    const words = this.#words;
    let state = Atomics.compareExchange(words, this.#lock, FREE, HELD);
    if (state !== FREE) {
      if (state !== CONTENDED) state = Atomics.exchange(words, this.#lock, CONTENDED);
      while (state !== FREE) {
        Atomics.wait(words, this.#lock, CONTENDED);
        state = Atomics.exchange(words, this.#lock, CONTENDED);
      }
    }
    Atomics.store(words, this.#owner, this.#tag);
  }

  release(): void {
    const words = this.#words;
    Atomics.store(words, this.#owner, 0);
    if (Atomics.sub(words, this.#lock, 1) !== HELD) {
      Atomics.store(words, this.#lock, FREE);
      Atomics.notify(words, this.#lock, 1);
    }
  }

  /**
   * Frees the lock if the thread tagged `tag` died holding it (main thread, on a worker's exit). What it
   * was writing may be half done: one counter off by its last call, against every thread waiting for ever.
   */
  releaseIfHeldBy(tag: number): boolean {
    if (Atomics.compareExchange(this.#words, this.#owner, tag, 0) !== tag) return false;
    Atomics.store(this.#words, this.#lock, FREE);
    Atomics.notify(this.#words, this.#lock, 1);
    return true;
  }
}
