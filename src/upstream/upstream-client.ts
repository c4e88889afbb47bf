/**
 * The OpenAI-compatible upstream client: one undici Pool per origin, reused across requests (keep-alive),
 * `pool.request` rather than fetch (no WHATWG streams on the hot path: see BASELINE.md). Bodies are sent
 * as the exact bytes prepared by the route. The caller's AbortSignal aborts the upstream request at once.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { Pool, errors } from 'undici';
import type { Dispatcher } from 'undici';

export interface UpstreamTarget {
  /** e.g. http://127.0.0.1:9100/v1 */
  readonly baseUrl: string;
  readonly apiKey: string | null;
}

export interface UpstreamCall {
  readonly path: string;
  /** Exact bytes, or a stream (multipart uploads forwarded as they arrive). */
  readonly body: Buffer | Readable;
  /** Default application/json. */
  readonly contentType?: string;
  readonly signal: AbortSignal | UpstreamAbort;
  readonly accept?: string;
  /** undici idle timeouts; our own deadline timers are the ones that produce client-visible errors. */
  readonly headersTimeoutMs: number;
  readonly bodyTimeoutMs: number;
}

export type UpstreamResponse = Dispatcher.ResponseData;

/** A whole upstream response, read into memory (non-streamed turns). */
export interface BufferedResponse {
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/**
 * An abort trigger undici accepts in place of an AbortSignal: it calls `once('abort', fn)` and later
 * `removeListener('abort', fn)` on anything without `addEventListener`. One per turn. Not an
 * EventEmitter: its listener table is a dictionary-mode object made at construction and again whenever
 * the last listener goes, ~400 bytes a turn for one event that fires at most once.
 */
export class UpstreamAbort {
  aborted = false;
  #listeners: (() => void)[] | null = null;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listeners = this.#listeners;
    this.#listeners = null;
    listeners?.forEach((listener) => listener());
  }

  /** The only event is 'abort', and it fires once: `on` and `once` are the same. */
  once(_event: 'abort', listener: () => void): this {
    (this.#listeners ??= []).push(listener);
    return this;
  }

  on(event: 'abort', listener: () => void): this {
    return this.once(event, listener);
  }

  removeListener(_event: 'abort', listener: () => void): this {
    const at = this.#listeners?.indexOf(listener) ?? -1;
    if (at >= 0) this.#listeners?.splice(at, 1);
    return this;
  }
}

export interface UpstreamClient {
  post(target: UpstreamTarget, call: UpstreamCall): Promise<UpstreamResponse>;
  /**
   * The same request with the response read whole. Dispatched with a handler of our own rather than
   * `pool.request`: no Readable body stream, no body-mixin promise (bench/RESULTS.md).
   */
  exchange(target: UpstreamTarget, call: UpstreamCall & { readonly body: Buffer; readonly signal: UpstreamAbort }): Promise<BufferedResponse>;
  close(): Promise<void>;
}

interface Origin {
  readonly pool: Pool;
  readonly prefix: string;
}

export function createUpstreamClient(): UpstreamClient {
  const origins = new Map<string, Origin>();

  function originFor(baseUrl: string): Origin {
    let origin = origins.get(baseUrl);
    if (!origin) {
      const url = new URL(baseUrl);
      origin = {
        pool: new Pool(url.origin, { connections: 256, pipelining: 1, keepAliveTimeout: 30_000 }),
        prefix: url.pathname.replace(/\/+$/, ''),
      };
      origins.set(baseUrl, origin);
    }
    return origin;
  }

  function requestHeaders(target: UpstreamTarget, call: UpstreamCall): Record<string, string> {
    const headers: Record<string, string> = { 'content-type': call.contentType ?? 'application/json' };
    if (call.accept) headers.accept = call.accept;
    if (target.apiKey) headers.authorization = `Bearer ${target.apiKey}`;
    return headers;
  }

  return {
    post(target, call) {
      const origin = originFor(target.baseUrl);
      return origin.pool.request({
        method: 'POST',
        path: origin.prefix + call.path,
        headers: requestHeaders(target, call),
        body: call.body,
        signal: call.signal,
        headersTimeout: call.headersTimeoutMs,
        bodyTimeout: call.bodyTimeoutMs,
      });
    },
    exchange(target, call) {
      const origin = originFor(target.baseUrl);
      return new Promise<BufferedResponse>((resolve, reject) => {
        const options: Dispatcher.DispatchOptions = {
          method: 'POST',
          path: origin.prefix + call.path,
          headers: requestHeaders(target, call),
          body: call.body,
          headersTimeout: call.headersTimeoutMs,
          bodyTimeout: call.bodyTimeoutMs,
        };
        origin.pool.dispatch(options, new BufferingHandler(call.signal, resolve, reject));
      });
    },
    async close() {
      await Promise.all([...origins.values()].map((o) => o.pool.close()));
    },
  };
}

/** Collects one response; an abort of the turn aborts the request wherever it is (queued, sent or reading). */
class BufferingHandler implements Dispatcher.DispatchHandler {
  readonly #signal: UpstreamAbort;
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

  constructor(signal: UpstreamAbort, resolve: (res: BufferedResponse) => void, reject: (err: Error) => void) {
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

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#size += chunk.length;
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
