/**
 * The OpenAI-compatible upstream client: one undici Pool per origin, reused across requests (keep-alive),
 * `pool.request` rather than fetch (no WHATWG streams on the hot path: see BASELINE.md). Bodies are sent
 * as the exact bytes prepared by the route. The caller's AbortSignal aborts the upstream request at once.
 */
import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import { Pool } from 'undici';
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

/**
 * An abort trigger undici accepts in place of an AbortSignal (it listens for 'abort' on an emitter).
 * One per turn instead of an AbortController: measurably cheaper on a path that runs per request.
 */
export class UpstreamAbort extends EventEmitter {
  aborted = false;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }
}

export interface UpstreamClient {
  post(target: UpstreamTarget, call: UpstreamCall): Promise<UpstreamResponse>;
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

  return {
    post(target, call) {
      const origin = originFor(target.baseUrl);
      const headers: Record<string, string> = { 'content-type': call.contentType ?? 'application/json' };
      if (call.accept) headers.accept = call.accept;
      if (target.apiKey) headers.authorization = `Bearer ${target.apiKey}`;
      return origin.pool.request({
        method: 'POST',
        path: origin.prefix + call.path,
        headers,
        body: call.body,
        signal: call.signal,
        headersTimeout: call.headersTimeoutMs,
        bodyTimeout: call.bodyTimeoutMs,
      });
    },
    async close() {
      await Promise.all([...origins.values()].map((o) => o.pool.close()));
    },
  };
}
