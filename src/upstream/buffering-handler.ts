/**
 * An undici dispatch handler that collects one whole response: no Readable body stream and no body-mixin
 * promise for non-streamed turns (bench/RESULTS.md). An abort of the turn aborts the request wherever it
 * is (queued, sent or reading).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import { AbortableHandler, type AbortTrigger } from './abortable-handler.js';
import { answerTooLarge, MAX_ANSWER_BYTES } from './answer-cap.js';

/** A whole upstream response, read into memory (non-streamed turns). */
export interface BufferedResponse {
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

export class BufferingHandler extends AbortableHandler implements Dispatcher.DispatchHandler {
  readonly #resolve: (res: BufferedResponse) => void;
  readonly #reject: (err: Error) => void;
  #statusCode = 0;
  #headers: IncomingHttpHeaders = {};
  #chunks: Buffer[] = [];
  #size = 0;

  constructor(signal: AbortTrigger, resolve: (res: BufferedResponse) => void, reject: (err: Error) => void) {
    super(signal);
    this.#resolve = resolve;
    this.#reject = reject;
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.#statusCode = statusCode;
    this.#headers = headers;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#size += chunk.length;
    if (this.#size > MAX_ANSWER_BYTES) {
      // Stop reading and fail the turn; undici reports the abort through onResponseError, ignored then.
      this.#chunks = [];
      this.stopListening();
      this.#reject(answerTooLarge(MAX_ANSWER_BYTES));
      this.abortRequest();
      return;
    }
    this.#chunks.push(chunk);
  }

  onResponseEnd(): void {
    this.stopListening();
    const body = this.#chunks.length === 1 ? (this.#chunks[0] as Buffer) : Buffer.concat(this.#chunks, this.#size);
    this.#resolve({ statusCode: this.#statusCode, headers: this.#headers, body });
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.stopListening();
    this.#reject(error);
  }
}
