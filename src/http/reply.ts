/**
 * Writing a response. Every write is corked (writes happen after awaits, outside the uWS callback), the
 * request id and any headers set by guards (rate limits, later) go on every response, and errors are
 * rendered in exactly one place: `{error: {message, type, code, param}}`.
 */
import type { HttpResponse as UwsResponse } from 'uWebSockets.js';
import { byteCache } from '../byte-cache.js';
import { GatewayError, toGatewayError } from '../errors.js';
import type { BodyGate } from './body-gate.js';
import { DrainState } from './drain-state.js';

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK', 201: '201 Created', 202: '202 Accepted', 204: '204 No Content', 302: '302 Found', 303: '303 See Other', 400: '400 Bad Request', 401: '401 Unauthorized', 402: '402 Payment Required',
  403: '403 Forbidden', 404: '404 Not Found', 405: '405 Method Not Allowed', 408: '408 Request Timeout', 409: '409 Conflict',
  413: '413 Payload Too Large', 406: '406 Not Acceptable', 415: '415 Unsupported Media Type', 426: '426 Upgrade Required', 429: '429 Too Many Requests', 500: '500 Internal Server Error',
  499: '499 Client Closed Request', 501: '501 Not Implemented', 502: '502 Bad Gateway', 503: '503 Service Unavailable', 504: '504 Gateway Timeout',
};

/** SPEC's response header naming the gateway worker that answered (set by server.ts and ws.ts). */
export const WORKER_ID_HEADER = 'X-Service-Worker-ID';

/**
 * A header value that would end its line (CR, LF) splits the response: whatever follows becomes a header
 * of the attacker's choosing (RFC 9110 5.5 forbids CR, LF and NUL in field values). Names must be RFC 9110
 * tokens. Checked where a header enters the reply, once per header, so a bad one is refused before
 * anything is written.
 */
const UNSAFE_VALUE = /[\r\n\0]/;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Thrown by the reply for a header it must not write: a bug (every value the gateway writes is its own or
 * checked first), so it is not a GatewayError: the server logs it as unexpected and answers 500
 * internal_error, without the header.
 */
export class UnsafeHeaderError extends Error {
  constructor(name: string, problem: string) {
    super(`refused to write response header ${JSON.stringify(name.slice(0, 64))}: ${problem}`);
    this.name = 'UnsafeHeaderError';
  }
}

/** Names already found to be tokens: the same few dozen on every response, so a hash lookup, not a regex. */
const goodNames = new Set<string>();

/** Null when the header may be written; otherwise what is wrong with it (never echoing the value). */
export function headerProblem(name: string, value: string): string | null {
  if (!goodNames.has(name)) {
    if (!TOKEN.test(name)) return 'the name is not an HTTP token';
    // Bounded: names built from input (a model server's headers relayed) cannot grow it without end.
    if (goodNames.size < 1024) goodNames.add(name);
  }
  if (UNSAFE_VALUE.test(value)) return 'the value holds CR, LF or NUL';
  return null;
}

function checkedHeader(name: string, value: string): void {
  const problem = headerProblem(name, value);
  if (problem !== null) throw new UnsafeHeaderError(name, problem);
}

export function statusLine(status: number): string {
  return STATUS_TEXT[status] ?? String(status);
}

/**
 * Status lines and header names handed to uWS as bytes: a JS string is re-encoded to UTF-8 on every
 * writeHeader, and these are the same few dozen strings on every response (measured: ~0.1 us a header).
 * Values, which vary, stay strings.
 */
const bytesOf = byteCache(256);

/**
 * What an answer must wait for before it leaves: the usage rows its turn recorded, which under load the
 * usage journal holds and writes for the whole event-loop turn at once (store/usage-journal.ts). Null on
 * servers that record none.
 */
export interface AnswerBarrier {
  /** Something recorded is not written yet: an answer ending now waits for it. */
  readonly holding: boolean;
  /** Runs `send` once what is held is written (at the latest at setImmediate). */
  after(send: () => void): void;
}

export class Reply {
  readonly #res: UwsResponse;
  readonly #headers: [string, string][];
  #aborted = false;
  /** The handler has answered (the bytes may still wait in the body gate). */
  #ended = false;
  /** uWS's end() ran: its response object must not be touched again. */
  #finished = false;
  #headWritten = false;
  /** beginStream ran: the head is committed, and goes out with the stream's first bytes (#streamType). */
  #streamType: string | null = null;
  #gate: BodyGate | null = null;
  /** What write() hands its corked callback, and what uWS answered. */
  #chunk: string | Buffer = '';
  #wrote = true;
  #corkedWrite: (() => void) | null = null;
  status = 0;

  readonly #drain: DrainState;
  readonly #barrier: AnswerBarrier | null;
  #unwatchDeadline: (() => void) | null = null;

  /**
   * `drain`: while the server drains, every response ends its connection (Connection: close, FIN after
   * the last byte), so the final close of the app never cuts a client off before it has read its answer.
   */
  constructor(res: UwsResponse, requestId: string, drain: DrainState = new DrainState(), barrier: AnswerBarrier | null = null) {
    this.#res = res;
    this.#headers = [['X-Request-ID', requestId]];
    this.#drain = drain;
    this.#barrier = barrier;
  }

  /**
   * A response's last words if the server's drain deadline comes before its end: the handler writes them
   * and ends the stream (or, for an answer not begun, makes it answer). Forgotten once the response ends
   * or the client leaves.
   */
  onDrainDeadline(handler: () => void): void {
    this.#unwatchDeadline?.();
    this.#unwatchDeadline = this.#drain.onDeadline(handler);
  }

  #forgetDeadline(): void {
    this.#unwatchDeadline?.();
    this.#unwatchDeadline = null;
  }

  get open(): boolean {
    return !this.#aborted && !this.#ended;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Whether uWS's response object may still be used (body readers pause and resume the socket through it). */
  get usable(): boolean {
    return !this.#aborted && !this.#finished;
  }

  /** Answers wait for the rest of the request body (body-gate.ts). */
  holdUntilBodyIn(gate: BodyGate): void {
    this.#gate = gate;
  }

  /** Whether the answer's head is committed: written, or begun as a stream whose first write carries it. */
  get headWritten(): boolean {
    return this.#headWritten || this.#streamType !== null;
  }

  markAborted(): void {
    this.#aborted = true;
    this.#gate?.cancel();
    this.#forgetDeadline();
  }

  /** Headers set so far (request id, rate limits): a WebSocket upgrade writes them on its 101. */
  get pendingHeaders(): readonly (readonly [string, string])[] {
    return this.#headers;
  }

  /** Adds a header to whatever response is eventually sent, success or error. */
  setHeader(name: string, value: string): void {
    checkedHeader(name, value);
    this.#headers.push([name, value]);
  }

  /**
   * Sets the header unless one of that name (compared case-insensitively) is set already: headers a page
   * must carry exactly once (the dashboard's security headers) however many layers of it add them.
   */
  setHeaderOnce(name: string, value: string): void {
    const lower = name.toLowerCase();
    if (!this.#headers.some(([k]) => k.toLowerCase() === lower)) this.setHeader(name, value);
  }

  /**
   * Replaces every header of that name set so far (names compared case-insensitively): the dashboard's
   * playground page widens the CSP the session guard set, since a second CSP header could only narrow it.
   */
  replaceHeader(name: string, value: string): void {
    checkedHeader(name, value);
    const lower = name.toLowerCase();
    for (let i = this.#headers.length - 1; i >= 0; i -= 1) if (this.#headers[i]?.[0].toLowerCase() === lower) this.#headers.splice(i, 1);
    this.#headers.push([name, value]);
  }

  json(status: number, body: unknown): void {
    this.#answer(status, JSON.stringify(body), 'application/json', false);
  }

  jsonText(status: number, text: string): void {
    this.#answer(status, text, 'application/json', false);
  }

  /** `contentType` may come from elsewhere (a model server's answer): checked like every other header. */
  send(status: number, body: string | Buffer, contentType: string, closeConnection = false): void {
    checkedHeader('Content-Type', contentType);
    this.#answer(status, body, contentType, closeConnection);
  }

  empty(status: number): void {
    this.#answer(status, null, null, false);
  }

  /** `body` null: no body at all (endWithoutBody), as a 204 needs. */
  #answer(status: number, body: string | Buffer | null, contentType: string | null, closeConnection: boolean): void {
    if (!this.open) return;
    this.#ended = true;
    // A buffered turn waiting on its model watched the drain deadline (chat-dispatch.ts): answered, it leaves.
    if (this.#unwatchDeadline !== null) this.#forgetDeadline();
    this.status = status;
    const gate = this.#gate;
    if (gate !== null && gate.pending) gate.hold((close) => this.#end(status, body, contentType, closeConnection, close));
    else this.#end(status, body, contentType, closeConnection, false);
  }

  /**
   * `linger`: the body gate gives up on the rest of the body. uWS's own close (end with closeConnection)
   * shuts down and closes in one call, and a close with unread bytes is a reset that destroyed the answer
   * before a client that was still sending could read it. So the socket is paused instead (the client's
   * further bytes fill the socket buffers, bounded), the answer says `Connection: close`, and uWS's idle
   * timeout (about 10 s) closes the connection once the client has had time to read it (issue 31).
   */
  #end(status: number, body: string | Buffer | null, contentType: string | null, closeConnection: boolean, linger: boolean): void {
    if (this.#aborted) return;
    const barrier = this.#barrier;
    if (barrier !== null && barrier.holding) {
      barrier.after(() => this.#end(status, body, contentType, closeConnection, linger));
      return;
    }
    this.#finished = true;
    const close = closeConnection || this.#drain.draining;
    this.#res.cork(() => {
      if (linger && !close) this.#res.pause();
      this.#writeHead(status, contentType);
      if (linger && !close) this.#res.writeHeader(bytesOf('Connection'), 'close');
      if (body === null) this.#res.endWithoutBody(0, close);
      else this.#res.end(body, close);
    });
  }

  error(err: unknown): void {
    // An answer already given (perhaps still held by the body gate) must not gain a second header set.
    if (!this.open) return;
    const e: GatewayError = toGatewayError(err);
    // Every error says whether a retry can help (errors.ts `retryable`): clients that obey it stop
    // re-sending deadline overruns, which their status rules would retry.
    this.#headers.push(['x-should-retry', e.retryable ? 'true' : 'false']);
    let close = false;
    if (e.headers) {
      for (const [k, v] of Object.entries(e.headers)) {
        // uWS writes `Connection: close` itself when asked to close; a second copy would be a duplicate.
        if (k === 'Connection' && v === 'close') close = true;
        // Never thrown from here (this is the last answer a failed request gets): an unsafe header an
        // error carries is left out, and the error still goes out.
        else if (headerProblem(k, v) === null) this.#headers.push([k, v]);
      }
    }
    this.#answer(e.status, JSON.stringify(e.toEnvelope()), 'application/json', close);
  }

  /**
   * Starts a streamed response (SSE). The head goes out with the first write or the end, in the same
   * socket write: uWS could not finish the header block before the first write anyway (it adds
   * Transfer-Encoding then), so an early head bought clients nothing and cost a syscall per stream.
   */
  beginStream(status: number, contentType: string): void {
    if (!this.open || this.headWritten) return;
    checkedHeader('Content-Type', contentType);
    this.status = status;
    if (this.#drain.draining) this.#headers.push(['Connection', 'close']);
    this.#streamType = contentType;
  }

  /** Writes a chunk of a streamed response; false when the socket buffer is full (wait for onWritable). */
  write(chunk: string | Buffer): boolean {
    if (!this.open) return false;
    this.#chunk = chunk;
    // One corked callback per streamed reply, made at its first write, not a closure per write (issue 35).
    this.#res.cork((this.#corkedWrite ??= () => this.#writeCorked()));
    this.#chunk = '';
    return this.#wrote;
  }

  #writeCorked(): void {
    this.#writeStreamHead();
    this.#wrote = this.#res.write(this.#chunk);
  }

  onWritable(handler: () => void): void {
    if (!this.usable) return;
    this.#res.onWritable(() => {
      handler();
      return true;
    });
  }

  /**
   * Ends a streamed response. Never with uWS's closeConnection: after write() it puts `Connection: close`
   * into the chunked body itself, which broke every stream in flight at a graceful stop. A stream whose
   * head went out during a drain carries the header instead (#writeHead), and the drain closes the
   * connections once the last response is over. `last`: the stream's final bytes, sent in the same write.
   */
  endStream(last?: string | Buffer): void {
    if (!this.open) return;
    this.#ended = true;
    this.#forgetDeadline();
    this.#endStream(last);
  }

  #endStream(last: string | Buffer | undefined): void {
    if (this.#aborted) return;
    const barrier = this.#barrier;
    if (barrier !== null && barrier.holding) {
      barrier.after(() => this.#endStream(last));
      return;
    }
    this.#finished = true;
    this.#res.cork(() => {
      this.#writeStreamHead();
      if (last === undefined) this.#res.end();
      else this.#res.end(last);
    });
  }

  #writeStreamHead(): void {
    if (this.#streamType !== null) this.#writeHead(this.status, this.#streamType);
  }

  #writeHead(status: number, contentType: string | null): void {
    if (this.#headWritten) return;
    this.#headWritten = true;
    this.#res.writeStatus(bytesOf(statusLine(status)));
    if (contentType) this.#res.writeHeader(bytesOf('Content-Type'), contentType);
    for (const [k, v] of this.#headers) this.#res.writeHeader(bytesOf(k), v);
  }
}
