/**
 * The dispatcher's outcome buffer: delivery outcomes are written in one small transaction per `flushMs`
 * or FLUSH_MAX results. A failed write keeps them (the rows stay `sending` in the store) and tries again
 * a second later.
 */
import type { DeliveryResult } from './delivery.js';
import { messageOf, onAnswer, type StoreAnswer } from './store-answer.js';

const FLUSH_MAX = 128;
const RETRY_MS = 1000;

export interface ResultWriterDeps {
  recordResults(results: readonly DeliveryResult[], now: number): StoreAnswer<void>;
  now(): number;
  readonly flushMs: number;
  reportError(message: string): void;
}

export class ResultWriter {
  readonly #deps: ResultWriterDeps;
  #results: DeliveryResult[] = [];
  #timer: NodeJS.Timeout | null = null;
  /** The last asynchronous outcome write, awaited by close. */
  #recording: Promise<void> | null = null;
  #stopped = false;

  constructor(deps: ResultWriterDeps) {
    this.#deps = deps;
  }

  /** After close: the store may be gone. */
  get stopped(): boolean {
    return this.#stopped;
  }

  queue(result: DeliveryResult): void {
    // After close the store may be gone: the row stays `sending` and is attempted again at the next start.
    if (this.#stopped) return;
    this.#results.push(result);
    if (this.#results.length >= FLUSH_MAX) this.flush();
    else this.#timer ??= setTimeout(this.flush, this.#deps.flushMs);
  }

  readonly flush = (): void => {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#results.length === 0) return;
    const batch = this.#results;
    this.#results = [];
    const failed = (err: unknown): void => {
      this.#results = [...batch, ...this.#results];
      this.#deps.reportError(`recording delivery outcomes failed: ${messageOf(err)}`);
      if (this.#timer) clearTimeout(this.#timer);
      this.#timer = this.#stopped ? null : setTimeout(this.flush, RETRY_MS);
    };
    try {
      const written = onAnswer(this.#deps.recordResults(batch, this.#deps.now()), () => undefined, failed);
      if (written) this.#recording = Promise.all([this.#recording, written]).then(() => undefined);
    } catch (err) {
      failed(err);
    }
  };

  /** Writes what is buffered, stops, and waits for the writes in flight. */
  async close(): Promise<void> {
    this.flush();
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#recording;
  }
}
