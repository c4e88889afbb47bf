/**
 * What a handler sees of a request. Everything is copied out of the uWS request synchronously (it is
 * invalid after the first await); the body is read as soon as the route is known, with its size cap;
 * a client abort turns into an AbortSignal for upstream calls and pool tasks.
 */
import type { HttpRequest as UwsRequest, HttpResponse as UwsResponse } from 'uWebSockets.js';
import { parseJsonBody } from '../json-body.js';
import { GatewayError } from '../errors.js';
import { bodyTooLarge as tooLarge, type BodyGate } from './body-gate.js';
import { BodyStream } from './body-stream.js';
import { copyChunk } from './uws.js';
import type { RequestTrace } from '../tracing/trace-port.js';

/** uWS's peer address text is ASCII in a fresh ArrayBuffer: decoded in place, ~1.3 us less than Buffer.from + toString (measured). */
const ADDRESS_TEXT = new TextDecoder();

// Routes read a body they hold as a Buffer the way json() reads the request's.
export { parseJsonBody };

/** What the access log line says of a request, filled in by the steps that learn it. */

export interface RequestLog {
  project?: string;
  endpoint?: string;
  keyId?: string;
  upstreamMs?: number;
  /** Time to the first byte of a streamed answer. */
  ttftMs?: number;
  /**
   * Latency SLO measurements of a streamed answer (issue 14): time to its first content or reasoning token
   * (ttftMs is the first byte, often a role-only chunk), and per output token after it, once completed.
   */
  firstTokenMs?: number;
  tpotMs?: number;
  promptTokens?: number;
  completionTokens?: number;
  /** The error catalogue code of an error answer. */
  errorCode?: string;
  /** Read while the connection is open (uWS refuses the peer address once the response is over). */
  clientIp?: string;
}

/** uWS's `res.onData`, wrapped by the server so that nothing thrown in a handler escapes into uWS. */
export type DataSource = (handler: (chunk: ArrayBuffer, isLast: boolean) => void) => void;

export class IncomingRequest {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly headers: Record<string, string> = {};
  readonly requestId: string;
  readonly startedAt: number;
  params: Readonly<Record<string, string>> = {};
  /** Set by route guards for the request log; never holds key values or prompt text. */
  readonly log: RequestLog = {};
  /** Where the request came from: the API, or the dashboard's own chat (its turns run as synthetic requests). */
  surface: 'api' | 'dashboard' = 'api';
  /** The request's trace when tracing is on (src/tracing); null otherwise, and then no seam does more than check. */
  trace: RequestTrace | null = null;
  #aborted = false;
  #controller: AbortController | null = null;
  #abortListeners: (() => void)[] | null = null;
  #body: Promise<Buffer> | null = null;
  /** Fails a buffered body that is still arriving; set by startBody until the body is in. */
  #failBody: ((err: GatewayError) => void) | null = null;
  #stream: BodyStream | null = null;
  readonly #res: UwsResponse;
  readonly #trustProxy: boolean;
  #clientIp: string | null = null;

  constructor(res: UwsResponse, req: UwsRequest, method: string, path: string, requestId: string, trustProxy: boolean) {
    this.method = method;
    this.path = path;
    this.query = req.getQuery() ?? '';
    req.forEach((k, v) => {
      this.headers[k] = v;
    });
    this.#res = res;
    this.#trustProxy = trustProxy;
    this.requestId = requestId;
    this.startedAt = performance.now();
  }

  /**
   * The peer address, or with trust_proxy the address the front proxy saw (X-Forwarded-For). Read on first
   * use (it is a getpeername syscall, and most keys have no IP filter); '' when first asked after the
   * response is over (uWS refuses access to it then).
   */
  get clientIp(): string {
    if (this.#clientIp === null) {
      const forwarded = this.#trustProxy ? lastForwardedFor(this.headers['x-forwarded-for']) : null;
      this.#clientIp = forwarded ?? this.#peerAddress();
    }
    return this.#clientIp;
  }

  /**
   * The address of the socket's other end, never X-Forwarded-For (which the client writes): who may reach
   * the test hooks. '' once the response is over.
   */
  get peerAddress(): string {
    return this.#peerAddress();
  }

  /** A request the gateway makes on a client's behalf (the playground): that client's address, not the stand-in's. */
  actFor(clientIp: string): void {
    this.#clientIp = clientIp;
  }

  #peerAddress(): string {
    if (this.#aborted) return '';
    try {
      return ADDRESS_TEXT.decode(this.#res.getRemoteAddressAsText());
    } catch {
      return '';
    }
  }

  get aborted(): boolean {
    return this.#aborted;
  }

  /** Created on first use: most requests never need one. */
  get signal(): AbortSignal {
    this.#controller ??= new AbortController();
    if (this.#aborted) this.#controller.abort();
    return this.#controller.signal;
  }

  /** A plain callback on client abort: cheaper than an AbortSignal on the hot path. */
  onAbort(listener: () => void): void {
    if (this.#aborted) listener();
    else (this.#abortListeners ??= []).push(listener);
  }

  markAborted(): void {
    this.#aborted = true;
    this.#controller?.abort();
    const listeners = this.#abortListeners;
    this.#abortListeners = null;
    listeners?.forEach((l) => l());
    this.#stream?.destroy(new Error('the client aborted the request'));
    // The rest of a buffered body will never come: without this the handler awaits it forever, the request
    // stays in flight (metrics, and every graceful stop waits out its drain timeout) and nothing logs it.
    this.#failBody?.(new GatewayError('invalid_request', { message: 'The client closed the connection before sending the whole body.' }));
    this.#failBody = null;
  }

  header(name: string): string | undefined {
    return this.headers[name];
  }

  searchParams(): URLSearchParams {
    return new URLSearchParams(this.query);
  }

  /**
   * Starts reading the body now (must run inside the uWS handler); rejects with 413 past `limit` bytes.
   * Every chunk is reported to `gate`, which holds an early answer until the body is in (body-gate.ts);
   * the response itself is never touched from here, since it may already be over.
   */
  startBody(onData: DataSource, limit: number, gate: BodyGate): void {
    const declared = Number(this.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      // Refused at once; what the client still sends is read and dropped until the gate lets the 413 out.
      this.#body = Promise.reject(tooLarge(limit));
      this.#body.catch(ignore);
      onData((chunk, isLast) => gate.received(chunk.byteLength, isLast));
      return;
    }
    this.#body = new Promise<Buffer>((resolve, reject) => {
      this.#failBody = reject;
      const chunks: Buffer[] = [];
      let size = 0;
      let failed = false;
      onData((chunk, isLast) => {
        size += chunk.byteLength;
        // Past the cap, or once an answer is waiting for the rest of the body: keep nothing.
        if (!failed && !gate.answered) {
          if (size > limit) {
            failed = true;
            reject(tooLarge(limit));
          } else {
            // uWS reuses the chunk's memory after this callback returns: copy it.
            chunks.push(copyChunk(chunk));
            if (isLast) resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
          }
        }
        if (isLast) this.#failBody = null;
        gate.received(chunk.byteLength, isLast);
      });
    });
    this.#body.catch(ignore);
  }

  /** Streamed routes (RouteDef.streamBody): the body as a Readable, read under backpressure. */
  startBodyStream(res: UwsResponse, onData: DataSource, limit: number, resUsable: () => boolean, gate: BodyGate): void {
    this.#stream = new BodyStream(res, onData, limit, resUsable, Number(this.headers['content-length']), gate);
    this.#stream.on('error', () => undefined);
  }

  /** A body nobody will read (the request is refused before its route runs): dropped as it arrives. */
  dropBody(onData: DataSource, gate: BodyGate): void {
    onData((chunk, isLast) => gate.received(chunk.byteLength, isLast));
  }

  bodyStream(): BodyStream | null {
    return this.#stream;
  }

  /** Before an early response on a streamed route: the unread rest of the body is drained and dropped. */
  discardBody(): void {
    if (this.#stream && !this.#stream.complete) this.#stream.discard();
  }

  body(): Promise<Buffer> {
    return this.#body ?? Promise.resolve(Buffer.alloc(0));
  }

  /** The body as JSON; 400 invalid_json when it is not. */
  async json(): Promise<unknown> {
    return parseJsonBody(await this.body());
  }
}

/** Marks a body promise as handled: a request refused before reading its body must not warn of a rejection. */
function ignore(): void {}

/** The right-most entry is the one our trusted front proxy appended; entries left of it are client-supplied. */
function lastForwardedFor(header: string | undefined): string | null {
  if (!header) return null;
  const last = header.split(',').pop()?.trim();
  return last ? last : null;
}
