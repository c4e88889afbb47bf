/**
 * One upstream exchange, the same way for every route that calls a model server (chat turns buffered or
 * streamed, the x_exec and harness turns, multimodel steps and the planner, Responses passthrough, audio,
 * prompt-only routes, realtime segments, router embeddings): our deadline timer, the client's abort,
 * undici's idle timeouts as a backstop, and the mapping of every failure onto the client's error.
 *
 * Two pieces, so the hot path allocates no more than before: `UpstreamDeadline` is the turn's abort
 * trigger (it replaces the `UpstreamAbort` each call site made, and is the call's `signal`), and
 * `callUpstream` sends the call and answers with the response below 400 or throws the client's error:
 * `timeout` when our deadline fired, the upstream's status mapped (upstream-errors.ts) for 400 and above,
 * the client's own error for a server it could not reach (upstream-client.ts logs and counts those, with
 * their cause and request id). A streamed answer's body is read by the caller after the call resolves;
 * `failure(err)` names what went wrong while reading it, and `done()` clears the deadline.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from '../errors.js';
import { errorText } from './answer-cap.js';
import type { AnswerStream } from './answer-stream.js';
import { UpstreamAbort, type BufferedResponse, type UpstreamCall, type UpstreamClient, type UpstreamResponse, type UpstreamTarget } from './upstream-client.js';
import { mapUpstreamError, retryAfterSeconds, unreachableUpstream } from './upstream-errors.js';

/** The client's side of a call: its abort aborts the upstream request (IncomingRequest fits). */
export interface AbortSource {
  onAbort(listener: () => void): void;
}

/** Where the time to the upstream's answer is noted (the request's access log fields). */
export interface UpstreamLatencyLog {
  upstreamMs?: number | undefined;
}

/** Who the timeout message says did not answer. */
export type Answerer = 'model' | 'model server' | 'transcription server';

/**
 * An upstream call's abort trigger with its deadline: aborted by the client (`source`), by the deadline
 * (then `timedOut`), or by the caller (`abort()`, e.g. a stream's idle timer or a graceful stop). The
 * deadline runs from construction until `done()`.
 */
export class UpstreamDeadline extends UpstreamAbort {
  timedOut = false;
  /** performance.now() at construction: the call's own latencies are measured from here. */
  readonly started = performance.now();
  readonly #timer: NodeJS.Timeout;
  readonly #ms: number;
  readonly #answerer: Answerer;
  readonly #tier: string | null;
  readonly #log: UpstreamLatencyLog | null;

  /**
   * `tier` names the endpoint's tier in the timeout message (null: the message gives seconds only);
   * `log`, when given, gets `upstreamMs` as the answer's headers arrive, error statuses included.
   */
  constructor(ms: number, source: AbortSource | null, answerer: Answerer, tier: string | null, log: UpstreamLatencyLog | null) {
    super();
    this.#ms = ms;
    this.#answerer = answerer;
    this.#tier = tier;
    this.#log = log;
    // The deadline gets the trigger as the timer's argument: no closure per call.
    this.#timer = setTimeout(expire, ms, this);
    source?.onAbort(() => this.abort());
  }

  /** Clears the deadline; the trigger still aborts on demand. */
  done(): void {
    clearTimeout(this.#timer);
  }

  /** The client's error for a call that failed, or a streamed body whose read failed. */
  failure(err: unknown): GatewayError {
    if (this.timedOut) return new GatewayError('timeout', { message: this.#timeoutMessage() });
    if (err instanceof GatewayError) return err;
    return unreachableUpstream();
  }

  /** Notes the time to the answer's headers, when the caller asked for it. */
  answered(): void {
    if (this.#log) this.#log.upstreamMs = performance.now() - this.started;
  }

  #timeoutMessage(): string {
    const seconds = this.#ms / 1000;
    const within = this.#tier === null ? `${seconds} s` : `the ${this.#tier} tier's ${seconds} s deadline`;
    return `The ${this.#answerer} did not answer within ${within}.`;
  }
}

function expire(deadline: UpstreamDeadline): void {
  deadline.timedOut = true;
  deadline.abort();
}

/** A call whose signal is its deadline. */
export interface DeadlineCall extends UpstreamCall {
  readonly signal: UpstreamDeadline;
}

type BufferedCall = DeadlineCall & { readonly body: Buffer };

/**
 * Sends `call` to the endpoint: `stream` true gives undici's body stream (read by the caller), false the
 * answer read whole (the body must then be bytes). Resolves only with a status below 400.
 */
export function callUpstream(client: UpstreamClient, endpoint: UpstreamTarget, call: DeadlineCall, stream: true): Promise<UpstreamResponse>;
export function callUpstream(client: UpstreamClient, endpoint: UpstreamTarget, call: BufferedCall, stream: false): Promise<BufferedResponse>;
export function callUpstream(client: UpstreamClient, endpoint: UpstreamTarget, call: BufferedCall, stream: boolean): Promise<UpstreamResponse | BufferedResponse>;
export async function callUpstream(client: UpstreamClient, endpoint: UpstreamTarget, call: DeadlineCall, stream: boolean): Promise<UpstreamResponse | BufferedResponse> {
  let res: UpstreamResponse | BufferedResponse;
  try {
    // The overloads keep a buffered call's body bytes.
    res = stream ? await client.post(endpoint, call) : await client.exchange(endpoint, call as BufferedCall);
  } catch (err) {
    throw call.signal.failure(err);
  }
  call.signal.answered();
  if (res.statusCode < 400) return res;
  throw upstreamRefusal(res.statusCode, res.headers, Buffer.isBuffer(res.body) ? res.body.toString('utf8') : await errorText(res.body));
}

/**
 * A streamed chat answer, read by the gateway's own handler (answer-stream.ts) rather than undici's body
 * stream. Resolves only with a status below 400, as callUpstream.
 */
export async function callUpstreamStream(client: UpstreamClient, endpoint: UpstreamTarget, call: BufferedCall): Promise<AnswerStream> {
  let res: AnswerStream;
  try {
    res = await client.stream(endpoint, call);
  } catch (err) {
    throw call.signal.failure(err);
  }
  call.signal.answered();
  if (res.statusCode < 400) return res;
  throw upstreamRefusal(res.statusCode, res.headers, await res.errorText());
}

/** An error status from the model server as the client's error (its retry hint kept for a 429 or a 5xx). */
export function upstreamRefusal(status: number, headers: IncomingHttpHeaders, text: string): GatewayError {
  const header = (name: string): string | null => {
    const value = headers[name];
    return typeof value === 'string' ? value : null;
  };
  // The real clock, not the gateway's controllable one: an HTTP-date Retry-After is on the server's.
  const hint = retryAfterSeconds({ retryAfter: header('retry-after'), retryAfterMs: header('retry-after-ms') }, Date.now());
  return mapUpstreamError(status, text, hint);
}
