/**
 * An undici dispatch handler that collects one whole response: no Readable body stream and no body-mixin
 * promise for non-streamed turns (bench/RESULTS.md). An abort of the turn aborts the request wherever it
 * is (queued, sent or reading).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { errors, type Dispatcher } from 'undici';
import { answerTooLarge, MAX_ANSWER_BYTES } from './answer-cap.js';

/** A whole upstream response, read into memory (non-streamed turns). */
export interface BufferedResponse {
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** The abort trigger undici accepts in place of an AbortSignal (UpstreamAbort in upstream-client.ts). */
export interface AbortTrigger {
  readonly aborted: boolean;
  on(event: 'abort', listener: () => void): unknown;
  removeListener(event: 'abort', listener: () => void): unknown;
}

export class BufferingHandler implements Dispatcher.DispatchHandler {
  readonly #signal: AbortTrigger;
  readonly #resolve: (res: BufferedResponse) => void;
  readonly #reject: (err: Error) => void;
  #controller: Dispatcher.DispatchController | null = null;
  #statusCode = 0;
  #headers: IncomingHttpHeaders = {};
  #chunks: Buffer[] = [];
  #size = 0;
  readonly #onAbort = (): void => {
    this.#controller?.abort(new errors.RequestAbortedError());
  };

  constructor(signal: AbortTrigger, resolve: (res: BufferedResponse) => void, reject: (err: Error) => void) {
    this.#signal = signal;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#signal.aborted) controller.abort(new errors.RequestAbortedError());
    else this.#signal.on('abort', this.#onAbort);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.#statusCode = statusCode;
    this.#headers = headers;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#size += chunk.length;
    if (this.#size > MAX_ANSWER_BYTES) {
      // Stop reading and fail the turn; undici reports the abort through onResponseError, ignored then.
      this.#chunks = [];
      this.#signal.removeListener('abort', this.#onAbort);
      this.#reject(answerTooLarge(MAX_ANSWER_BYTES));
      controller.abort(new errors.RequestAbortedError());
      return;
    }
    this.#chunks.push(chunk);
  }

  onResponseEnd(): void {
    this.#signal.removeListener('abort', this.#onAbort);
    const body = this.#chunks.length === 1 ? (this.#chunks[0] as Buffer) : Buffer.concat(this.#chunks, this.#size);
    this.#resolve({ statusCode: this.#statusCode, headers: this.#headers, body });
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.#signal.removeListener('abort', this.#onAbort);
    this.#reject(error);
  }
}
