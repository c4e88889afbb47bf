/**
 * An audio SSE answer passed through as the model server wrote it, but only in whole events: the bytes
 * of an event still arriving are held back until its blank line comes. A stream cut mid-event then ends
 * with SPEC's error frame after the last whole event, never after half an event the client would read
 * as one (with its data cut short). An event longer than HOLD_MAX goes through as it comes (memory stays
 * bounded); a cut inside one is then ended by a blank line first.
 */

const HOLD_MAX = 1024 * 1024;
const LF_LF = Buffer.from('\n\n');
const CR_CR = Buffer.from('\r\r');
const CRLF_CRLF = Buffer.from('\r\n\r\n');

/** Just past the last event end (a blank line, in any of SSE's three line endings) in `buf`, or 0. */
function pastLastEventEnd(buf: Buffer): number {
  const ends = [buf.lastIndexOf(LF_LF), buf.lastIndexOf(CR_CR)].map((at) => (at < 0 ? 0 : at + 2));
  const crlf = buf.lastIndexOf(CRLF_CRLF);
  return Math.max(...ends, crlf < 0 ? 0 : crlf + 4);
}

export class WholeSseEvents {
  #held: Buffer = Buffer.alloc(0);
  /** What went out ends inside an event (one longer than HOLD_MAX). */
  #midEvent = false;

  /** The bytes to send now: every event this chunk completes. */
  push(chunk: Buffer): Buffer {
    const buf = this.#held.length === 0 ? chunk : Buffer.concat([this.#held, chunk]);
    const end = pastLastEventEnd(buf);
    if (end === 0 && buf.length > HOLD_MAX) {
      this.#held = Buffer.alloc(0);
      this.#midEvent = true;
      return buf;
    }
    if (end > 0) this.#midEvent = false;
    // A copy: a view would keep the whole upstream read alive for a few bytes.
    this.#held = Buffer.from(buf.subarray(end));
    return buf.subarray(0, end);
  }

  /** The stream ended as the model server meant: whatever it sent last goes out as it is. */
  rest(): Buffer {
    return this.#held;
  }

  /** The stream was cut: `frames` (SPEC's closing frames) follow the last whole event. */
  closing(frames: string): string {
    return this.#midEvent ? `\n\n${frames}` : frames;
  }
}
