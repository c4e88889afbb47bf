/**
 * Holds an answer back while its request body is still arriving: a lingering close, done before the
 * answer instead of after it.
 *
 * Why: uWS closes with close() right after a `Connection: close` answer; with unread request bytes in the
 * kernel the close becomes a reset, which destroys the answer before a client that is still sending reads
 * it (a 413 for a 64 MiB upload was lost in about 2 of 5 tries). And once uWS has sent an answer its
 * response object is gone: nothing can close the socket afterwards (touching it threw inside a uWS
 * callback and took the process down). So an answer that is ready before the body is in waits here while
 * the rest of the body is read and dropped, and goes out:
 *   - keep-alive, as soon as the last byte arrives (the connection stays usable);
 *   - with `Connection: close`, once the client has sent more than `discardBytes` in all, or has gone
 *     quiet for LINGER_IDLE_MS, or LINGER_TOTAL_MS after the answer was ready (nginx's lingering_timeout
 *     and lingering_time), whichever comes first.
 * Requests whose body is complete when they are answered (every well-formed request) never wait, nor do
 * bodies of a declared length (Content-Length), since uWS goes on reading such a body after the answer:
 *   - up to `discardBytes`, the answer goes out at once and keeps the connection (uWS drops the rest);
 *   - past it (999,999,999 bytes announced to a 512 MiB route), the answer goes out at once, closing.
 *     Held, it went out only at the bound, with a close that reset the connection under a client still
 *     sending, and was lost (issue 31).
 * "Closing" (`release(true)`) is a lingering close (Reply's `linger`): uWS.js cannot shut down the write
 * side and keep reading (its close after an answer is both in one call, and the response object is gone
 * afterwards), so the socket is paused, the answer says `Connection: close`, and uWS's idle timeout closes
 * it: the client reads the answer first, and sends at most what the socket buffers hold meanwhile.
 */
import { GatewayError } from '../errors.js';

export type Release = (closeConnection: boolean) => void;

const LINGER_IDLE_MS = 5_000;
const LINGER_TOTAL_MS = 30_000;

export class BodyGate {
  #pending: boolean;
  #received = 0;
  readonly #discardBytes: number;
  /** The Content-Length the client announced; NaN when chunked or absent. */
  readonly #declared: number;
  #release: Release | null = null;
  #idle: NodeJS.Timeout | null = null;
  #total: NodeJS.Timeout | null = null;

  /** `expectsBody` false: nothing will arrive (a GET, or a route that reads no body), never wait. */
  constructor(expectsBody: boolean, discardBytes: number, declaredLength = Number.NaN) {
    this.#pending = expectsBody;
    this.#discardBytes = discardBytes;
    this.#declared = declaredLength;
  }

  /** The body is still arriving. */
  get pending(): boolean {
    return this.#pending;
  }

  /** An answer is waiting for the body (readers stop keeping what arrives). */
  get answered(): boolean {
    return this.#release !== null;
  }

  /** Called by the body readers for every chunk uWS hands over. */
  received(bytes: number, isLast: boolean): void {
    this.#received += bytes;
    if (isLast) {
      this.#pending = false;
      this.#fire(false);
      return;
    }
    if (!this.#release) return;
    if (this.#received > this.#discardBytes) this.#fire(true);
    else this.#idle?.refresh();
  }

  /** Sends the answer now when the body is in, else when the gate opens (see above). */
  hold(release: Release): void {
    if (!this.#pending) {
      release(false);
      return;
    }
    if (Number.isFinite(this.#declared)) {
      release(this.#declared > this.#discardBytes);
      return;
    }
    if (this.#received > this.#discardBytes) {
      release(true);
      return;
    }
    this.#release = release;
    this.#idle = setTimeout(() => this.#fire(true), LINGER_IDLE_MS);
    this.#total = setTimeout(() => this.#fire(true), LINGER_TOTAL_MS);
  }

  /** The client went away: nothing will be sent. */
  cancel(): void {
    this.#pending = false;
    this.#release = null;
    this.#clearTimers();
  }

  #fire(closeConnection: boolean): void {
    const release = this.#release;
    if (!release) return;
    this.#release = null;
    this.#clearTimers();
    release(closeConnection);
  }

  #clearTimers(): void {
    if (this.#idle) clearTimeout(this.#idle);
    if (this.#total) clearTimeout(this.#total);
    this.#idle = this.#total = null;
  }
}

/** The Content-Length header as a number: NaN when absent or not a plain decimal length. */
export function declaredLength(header: string | undefined): number {
  return header !== undefined && /^\d{1,16}$/.test(header) ? Number(header) : Number.NaN;
}

/** How much of an unwanted body is read and dropped before the connection is given up: 16x the route's cap, within [1 MiB, 128 MiB]. */
export function discardBoundFor(limit: number): number {
  return Math.min(Math.max(limit * 16, 1024 * 1024), 128 * 1024 * 1024);
}

export function bodyTooLarge(limit: number): GatewayError {
  return new GatewayError('payload_too_large', { message: `The request body exceeds the ${limit}-byte limit for this route.` });
}
