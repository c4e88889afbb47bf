/**
 * What our undici dispatch handlers share (buffering-handler.ts for whole answers, answer-stream.ts for
 * streamed chat answers): the turn's abort trigger aborts the request wherever it is (queued, sent or
 * reading), and stops being listened to once the answer is over.
 */
import { errors, type Dispatcher } from 'undici';

/** The abort trigger undici accepts in place of an AbortSignal (UpstreamAbort in upstream-client.ts). */
export interface AbortTrigger {
  readonly aborted: boolean;
  on(event: 'abort', listener: () => void): unknown;
  removeListener(event: 'abort', listener: () => void): unknown;
}

export abstract class AbortableHandler {
  readonly #signal: AbortTrigger;
  /** undici's handle on the request: set when it starts, before any part of the answer. */
  protected controller: Dispatcher.DispatchController | null = null;
  readonly #onAbort = (): void => this.abortRequest();

  constructor(signal: AbortTrigger) {
    this.#signal = signal;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.#signal.aborted) controller.abort(new errors.RequestAbortedError());
    else this.#signal.on('abort', this.#onAbort);
  }

  /** Aborts the request; undici then reports it through onResponseError. */
  protected abortRequest(): void {
    this.controller?.abort(new errors.RequestAbortedError());
  }

  /** The answer is over (or given up on): the turn's abort no longer reaches it. */
  protected stopListening(): void {
    this.#signal.removeListener('abort', this.#onAbort);
  }
}
