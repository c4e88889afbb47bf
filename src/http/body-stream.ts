/**
 * A request body as a Node Readable, for routes that forward uploads instead of buffering them
 * (RouteDef.streamBody). uWS pushes chunks; when the consumer falls behind, the socket is paused
 * (`res.pause()`) and resumed on the next read, so memory stays at about one highWaterMark per upload.
 * Past the cap the stream fails with 413 and the rest of the body is read and dropped; every chunk is
 * reported to the request's BodyGate, which decides when the answer goes out (body-gate.ts).
 */
import { Readable } from 'node:stream';
import type { HttpResponse as UwsResponse } from 'uWebSockets.js';
import { bodyTooLarge as tooLarge, type BodyGate } from './body-gate.js';
import type { DataSource } from './request.js';
import { copyChunk } from './uws.js';

const HIGH_WATER_MARK = 256 * 1024;

export class BodyStream extends Readable {
  readonly #res: UwsResponse;
  /** Whether uWS's response object may still be touched (not aborted, not ended). */
  readonly #resUsable: () => boolean;
  #paused = false;
  #discarding = false;
  #complete = false;

  constructor(res: UwsResponse, onData: DataSource, limit: number, resUsable: () => boolean, declaredLength: number, gate: BodyGate) {
    super({ highWaterMark: HIGH_WATER_MARK });
    this.#res = res;
    this.#resUsable = resUsable;
    if (Number.isFinite(declaredLength) && declaredLength > limit) {
      this.#discarding = true;
      this.destroy(tooLarge(limit));
    }
    let size = 0;
    onData((chunk, isLast) => {
      size += chunk.byteLength;
      if (isLast) this.#complete = true;
      gate.received(chunk.byteLength, isLast);
      if (this.#discarding || gate.answered) return;
      if (size > limit) {
        this.#discarding = true;
        this.destroy(tooLarge(limit));
        return;
      }
      // uWS reuses the chunk's memory after this callback returns: copy it.
      const more = this.push(copyChunk(chunk));
      if (isLast) this.push(null);
      else if (!more && !this.#paused && this.#resUsable()) {
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
    if (this.#resUsable()) this.#res.resume();
  }
}
