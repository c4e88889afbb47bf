/**
 * A streamed answer read by our own undici dispatch handler: the handler is the body, and hands each read
 * of the socket straight to the one reader (a chat stream) with no Readable in between. undici's
 * `request()` wraps every streamed answer in a Readable, whose events, nextTicks and buffering were ~4% of
 * a streamed turn's CPU (issue 35); a chat stream has one reader that wants the bytes as they come.
 *
 * What undici delivers before the reader attaches (the headers resolve the call; the rest of the same
 * socket read, often the whole answer, arrives before the awaiting code runs) is queued, and handed over
 * in order when it attaches. Backpressure is the reader's: `pause()` stops undici's parser, `resume()`
 * starts it again. An abort of the turn aborts the request wherever it is (abortable-handler.ts, shared
 * with buffering-handler.ts for whole answers).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import { AbortableHandler, type AbortTrigger } from './abortable-handler.js';
import { MAX_ERROR_BYTES } from './answer-cap.js';

/** The one reader of a streamed answer. */
export interface AnswerReader {
  onAnswerData(chunk: Buffer): void;
  onAnswerEnd(): void;
  onAnswerError(err: Error): void;
}

/** Bytes queued before the reader attaches, past which undici's parser is paused until it does. */
const QUEUE_PAUSE_BYTES = 64 * 1024;

export class AnswerStream extends AbortableHandler implements Dispatcher.DispatchHandler {
  statusCode = 0;
  headers: IncomingHttpHeaders = {};
  #resolve: ((answer: AnswerStream) => void) | null;
  #reject: ((err: Error) => void) | null;
  #reader: AnswerReader | null = null;
  #queued: Buffer[] | null = null;
  #queuedBytes = 0;
  #ended = false;
  #error: Error | null = null;
  /** Run once the answer is over (ended, failed or aborted): the pool's release, the attempt's span. */
  #whenDone: (() => void)[] | null = null;

  constructor(signal: AbortTrigger, resolve: (answer: AnswerStream) => void, reject: (err: Error) => void) {
    super(signal);
    this.#resolve = resolve;
    this.#reject = reject;
  }

  /** The answer is over: read to its end, failed, or aborted. */
  get done(): boolean {
    return this.#ended || this.#error !== null;
  }

  /** Runs `f` once the answer is over (at once if it is). */
  whenDone(f: () => void): void {
    if (this.done) f();
    else (this.#whenDone ??= []).push(f);
  }

  /** Attaches the reader: what came before is handed over now, in order, then its end or failure. */
  read(reader: AnswerReader): void {
    this.#reader = reader;
    const queued = this.#queued;
    this.#queued = null;
    this.#queuedBytes = 0;
    if (queued !== null) for (const chunk of queued) reader.onAnswerData(chunk);
    if (this.#error !== null) reader.onAnswerError(this.#error);
    else if (this.#ended) reader.onAnswerEnd();
    else this.controller?.resume();
  }

  pause(): void {
    this.controller?.pause();
  }

  resume(): void {
    this.controller?.resume();
  }

  /** An error answer's text, at most MAX_ERROR_BYTES of it; the rest is not read. */
  errorText(): Promise<string> {
    return new Promise((resolve) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const finish = (): void => resolve(Buffer.concat(chunks, size).toString('utf8'));
      this.read({
        onAnswerData: (chunk) => {
          if (size >= MAX_ERROR_BYTES) return;
          const part = chunk.subarray(0, MAX_ERROR_BYTES - size);
          chunks.push(part);
          size += part.length;
          if (size >= MAX_ERROR_BYTES) {
            this.abortRequest();
            finish();
          }
        },
        onAnswerEnd: finish,
        // an error body that cannot be read whole is the part read; the status still speaks
        onAnswerError: finish,
      });
    });
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.statusCode = statusCode;
    this.headers = headers;
    const resolve = this.#resolve;
    this.#resolve = null;
    this.#reject = null;
    resolve?.(this);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const reader = this.#reader;
    if (reader !== null) {
      reader.onAnswerData(chunk);
      return;
    }
    (this.#queued ??= []).push(chunk);
    this.#queuedBytes += chunk.length;
    if (this.#queuedBytes > QUEUE_PAUSE_BYTES) controller.pause();
  }

  onResponseEnd(): void {
    this.#ended = true;
    this.stopListening();
    this.#reader?.onAnswerEnd();
    this.#settle();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.stopListening();
    const reject = this.#reject;
    this.#resolve = null;
    this.#reject = null;
    this.#error = error;
    // Before the headers: the call fails. After: the reader hears it (now, or when it attaches).
    if (reject !== null) reject(error);
    else this.#reader?.onAnswerError(error);
    this.#settle();
  }

  #settle(): void {
    const done = this.#whenDone;
    this.#whenDone = null;
    done?.forEach((f) => f());
  }
}
