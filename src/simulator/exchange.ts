import type { HttpResponse } from 'uWebSockets.js';
import { errorBody, SimError, statusLine } from './errors.js';
import type { RequestLogEntry } from './request-log.js';
import type { StreamTick } from './chat-stream.js';
import { copyChunk } from '../http/uws.js';

// One request/response pair on top of a raw uWS HttpResponse. Centralises the
// rules uWS punishes you for breaking: never touch `res` after onAborted or
// after end(), cork every write made outside the handler's synchronous part.

const MAX_BODY_BYTES = 32 * 1024 * 1024;

export class Exchange {
  aborted = false;
  finished = false;
  /** Set just before res.close() we initiate, so onAborted is not blamed on the client. */
  private closedByServer = false;
  private timer: NodeJS.Timeout | null = null;
  private resumeOnDrain: (() => void) | null = null;
  private headersSent = false;

  constructor(
    readonly res: HttpResponse,
    readonly entry: RequestLogEntry | null,
    private readonly onDone: (ex: Exchange) => void,
  ) {
    res.onAborted(() => {
      this.aborted = true;
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      if (this.entry && !this.closedByServer) {
        this.entry.aborted = true;
        this.entry.aborted_at_ms = Date.now();
      }
      this.onDone(this);
    });
  }

  /** Reads the whole body as text; uWS hands out chunks it neuters on return, so they are copied. */
  readBody(done: (text: string) => void): void {
    const chunks: Buffer[] = [];
    let size = 0;
    this.res.onData((chunk, isLast) => {
      if (this.finished || this.aborted) return;
      if (isLast && chunks.length === 0) {
        // Common case: one chunk, decoded before uWS neuters it, no copy needed.
        const text = Buffer.from(chunk).toString('utf8');
        if (this.entry) this.entry.body = text;
        done(text);
        return;
      }
      size += chunk.byteLength;
      if (size > MAX_BODY_BYTES) {
        this.sendError(new SimError(413, `Request body exceeds ${MAX_BODY_BYTES} bytes`, 'payload_too_large'));
        return;
      }
      chunks.push(copyChunk(chunk));
      if (isLast) {
        const text = Buffer.concat(chunks, size).toString('utf8');
        if (this.entry) this.entry.body = text;
        done(text);
      }
    });
  }

  /** Reads the whole body as bytes (multipart uploads). */
  readRaw(done: (body: Buffer) => void): void {
    const chunks: Buffer[] = [];
    let size = 0;
    this.res.onData((chunk, isLast) => {
      if (this.finished || this.aborted) return;
      size += chunk.byteLength;
      if (size > MAX_BODY_BYTES) {
        this.sendError(new SimError(413, `Request body exceeds ${MAX_BODY_BYTES} bytes`, 'payload_too_large'));
        return;
      }
      chunks.push(copyChunk(chunk));
      if (isLast) done(Buffer.concat(chunks, size));
    });
  }

  /** A whole non-JSON response (audio bytes, text transcripts). */
  sendBody(status: number, contentType: string, body: string | Buffer): void {
    if (this.aborted || this.finished) return;
    this.res.cork(() => {
      this.res.writeStatus(statusLine(status)).writeHeader('content-type', contentType);
      this.res.end(body);
    });
    this.complete(status);
  }

  /** Runs `fn` after `ms`, unless the client goes away first. */
  later(ms: number, fn: () => void): void {
    if (this.aborted) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      if (!this.aborted) fn();
    }, ms);
  }

  sendJson(status: number, body: string, headers: ReadonlyArray<readonly [string, string]> = []): void {
    if (this.aborted || this.finished) return;
    this.res.cork(() => {
      this.res.writeStatus(statusLine(status)).writeHeader('content-type', 'application/json');
      for (const [k, v] of headers) this.res.writeHeader(k, v);
      this.res.end(body);
    });
    this.complete(status);
  }

  sendError(err: SimError): void {
    this.sendJson(err.status, errorBody(err.status, err.message, err.code, err.param), err.headers);
  }

  /** Drops the connection without a response, as a crashed upstream would. */
  kill(): void {
    if (this.aborted || this.finished) return;
    this.closedByServer = true;
    this.finished = true;
    this.res.close();
  }

  /** Server shutdown: stop timers; the socket itself is closed by app.close(). */
  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.closedByServer = true;
  }

  /**
   * Writes SSE ticks. Ticks with no delay between them share one cork (so a
   * zero-delay stream is a single write); otherwise one cork per timer tick.
   * Under backpressure the next tick waits for onWritable instead of piling
   * more into uWS's buffer. `failAfter` closes the socket once that many
   * content/tool frames have gone out.
   */
  stream(ticks: readonly StreamTick[], delayBefore: (t: number) => number, failAfter: number | null): void {
    let t = 0;
    let counted = 0;
    this.res.onWritable(() => {
      const resume = this.resumeOnDrain;
      this.resumeOnDrain = null;
      if (resume) resume();
      return true;
    });
    const step = (): void => {
      if (this.aborted || this.finished) return;
      let out = '';
      let fail = false;
      do {
        for (const frame of ticks[t] ?? []) {
          if (frame.countsForFailAfter) {
            if (failAfter !== null && counted >= failAfter) {
              fail = true;
              break;
            }
            counted++;
          }
          out += frame.text;
        }
        t++;
      } while (!fail && t < ticks.length && delayBefore(t) === 0);
      const last = !fail && t >= ticks.length;
      let drained = true;
      this.res.cork(() => {
        if (!this.headersSent) {
          this.headersSent = true;
          this.res
            .writeStatus('200 OK')
            .writeHeader('content-type', 'text/event-stream')
            .writeHeader('cache-control', 'no-cache');
        }
        if (out.length > 0) drained = this.res.write(out);
        if (last) this.res.end();
      });
      if (last) return this.complete(200);
      if (fail) {
        if (this.entry) this.entry.status = 200;
        // Closing inside the handler's implicit cork (or with bytes still
        // buffered) would drop the chunks just written; close once they left.
        const killSoon = (): void => {
          setImmediate(() => this.kill());
        };
        if (drained) killSoon();
        else this.resumeOnDrain = killSoon;
        return;
      }
      const next = (): void => this.later(delayBefore(t), step);
      if (drained) next();
      else this.resumeOnDrain = next;
    };
    step();
  }

  private complete(status: number): void {
    this.finished = true;
    if (this.entry) {
      this.entry.status = status;
      this.entry.completed = true;
    }
    this.onDone(this);
  }
}
