/**
 * A request body as a Node Readable, for routes that forward uploads instead of buffering them
 * (RouteDef.streamBody). uWS pushes chunks; when the consumer falls behind, the socket is paused
 * (`res.pause()`) and resumed on the next read, so memory stays at about one highWaterMark per upload.
 * Past the cap the stream fails with 413 and the rest of the body is read and dropped (up to 16x the cap,
 * then the socket is closed), like the buffered reader.
 */
import { Readable } from 'node:stream';
import type { HttpResponse as UwsResponse } from 'uWebSockets.js';
import { GatewayError } from '../errors.js';
import { copyChunk } from './uws.js';

const DISCARD_FACTOR = 16;
const HIGH_WATER_MARK = 256 * 1024;

export class BodyStream extends Readable {
  readonly #res: UwsResponse;
  readonly #resOpen: () => boolean;
  #paused = false;
  #discarding = false;
  #complete = false;

  constructor(res: UwsResponse, limit: number, resOpen: () => boolean, declaredLength: number) {
    super({ highWaterMark: HIGH_WATER_MARK });
    this.#res = res;
    this.#resOpen = resOpen;
    if (Number.isFinite(declaredLength) && declaredLength > limit) {
      this.#discarding = true;
      this.destroy(tooLarge(limit, true));
    }
    let size = 0;
    res.onData((chunk, isLast) => {
      size += chunk.byteLength;
      if (isLast) this.#complete = true;
      if (this.#discarding) {
        if (size > limit * DISCARD_FACTOR && this.#resOpen()) res.close();
        return;
      }
      if (size > limit) {
        this.#discarding = true;
        this.destroy(tooLarge(limit, false));
        return;
      }
      // uWS reuses the chunk's memory after this callback returns: copy it.
      const more = this.push(copyChunk(chunk));
      if (isLast) this.push(null);
      else if (!more && !this.#paused && this.#resOpen()) {
        this.#paused = true;
        res.pause();
      }
    });
  }

  /** Whether uWS delivered the last chunk (the client finished sending). */
  get complete(): boolean {
    return this.#complete;
  }

  override _read(): void {
    this.#resume();
  }

  /** The handler is done with the body (an early error): read the rest and drop it. */
  discard(): void {
    this.#discarding = true;
    this.#resume();
    if (!this.destroyed) this.destroy();
  }

  #resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    if (this.#resOpen()) this.#res.resume();
  }
}

function tooLarge(limit: number, close: boolean): GatewayError {
  return new GatewayError('payload_too_large', {
    message: `The request body exceeds the ${limit}-byte limit for this route.`,
    ...(close ? { headers: { Connection: 'close' } } : {}),
  });
}
