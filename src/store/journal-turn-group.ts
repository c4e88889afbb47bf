/**
 * The journal's lines between a row's record and its write(2) (store/usage-journal.ts says why): one row at
 * a time is written at once; under load the lines of one event-loop turn are held and written together at
 * `setImmediate`, and the answers that must not leave before them wait here (http/reply.ts AnswerBarrier).
 *
 * Load is told by time: a row within GROUP_WINDOW_MS of the one before starts grouping, and a turn that
 * brought one row ends it. Grouping always cost one request at a time a `setImmediate` turn of the loop
 * (measured at one connection: ~20 us a request, and a longer p99); rows spread out pay nothing of it.
 */

/** Rows closer together than this are taken for load, and grouped. */
const GROUP_WINDOW_MS = 0.1;

export class TurnGroup {
  readonly #write: (text: string) => void;
  readonly #now: () => number;
  readonly #onError: (message: string) => void;
  #held = '';
  #waiting: (() => void)[] = [];
  #grouping = false;
  #rowsThisTurn = 0;
  #turnWatched = false;
  #lastAt = -Infinity;

  /** `write`: the segment's write(2), all of `text` or the journal's failure; `now`: a monotonic clock in ms. */
  constructor(write: (text: string) => void, now: () => number, onError: (message: string) => void) {
    this.#write = write;
    this.#now = now;
    this.#onError = onError;
  }

  get holding(): boolean {
    return this.#held !== '';
  }

  /** A row's line: written now, or held for the turn's write. */
  add(line: string): void {
    const at = this.#now();
    const close = at - this.#lastAt < GROUP_WINDOW_MS;
    this.#lastAt = at;
    if (!this.#grouping) {
      if (!close) {
        this.#write(line);
        return;
      }
      this.#grouping = true;
      // The row before, written at once, came in this burst too.
      this.#rowsThisTurn = 1;
    }
    this.#rowsThisTurn += 1;
    this.#held += line;
    if (!this.#turnWatched) {
      this.#turnWatched = true;
      setImmediate(this.#turnEnded);
    }
  }

  /** Runs `send` once the held lines are written (at once when none are held). */
  after(send: () => void): void {
    if (this.#held === '') send();
    else this.#waiting.push(send);
  }

  /** Writes the held lines now, then lets the answers waiting on them go. */
  settle(): void {
    this.writeHeld();
    if (this.#waiting.length > 0) this.#release();
  }

  /** Writes the held lines now (a segment about to close); the answers go at the turn's end. */
  writeHeld(): void {
    if (this.#held === '') return;
    const text = this.#held;
    this.#held = '';
    this.#write(text);
  }

  /** The journal broke: what is held will not be written (its rows still go to the batched insert). */
  drop(): void {
    this.#held = '';
  }

  readonly #turnEnded = (): void => {
    this.#turnWatched = false;
    this.#grouping = this.#rowsThisTurn > 1;
    this.#rowsThisTurn = 0;
    this.settle();
  };

  #release(): void {
    const go = this.#waiting;
    this.#waiting = [];
    for (const send of go) {
      try {
        send();
      } catch (err) {
        // One answer's failure must not keep the others back; the server's own guards report it.
        this.#onError(`an answer held for the usage journal failed: ${(err as Error).message}`);
      }
    }
  }
}
