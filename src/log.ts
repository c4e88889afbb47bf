/**
 * Structured JSON logs (pino). One line per request from the composition root (src/access-line.ts); never
 * a key value or prompt text. Writes go through an asynchronous destination so logging never blocks the
 * event loop.
 */
import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * Every line (pino's and the access lines of src/access-line.ts) goes through one LineQueue: the lines
 * written in one turn of the event loop are joined and handed to the destination once, as bytes. The
 * destination (pino's sonic-boom on fd 1, asynchronous, in buffer mode) writes once it holds MIN_BYTES,
 * and at least every FLUSH_MS, so a quiet server still shows its logs promptly.
 *
 * Why not pino's default (sonic-boom in utf8 mode, each line appended to a string): at 10,000 requests a
 * second that destination cost more than building the lines. Every append measured the byte length of
 * the whole pending string (a copy and a scan of up to 16 KiB per line), and every completed write
 * encoded the written string again to find what was left. Measured in bench/access-log.ts and
 * bench/RESULTS.md (the access-log section).
 */
const FLUSH_MS = 250;
const MIN_BYTES = 32 * 1024;
const MAX_WRITE = 64 * 1024;

export function createLogger(level: string | undefined): Logger {
  const destination = pino.destination({ dest: 1, sync: false, minLength: MIN_BYTES, maxWrite: MAX_WRITE, contentMode: 'buffer' });
  // In buffer mode sonic-boom's write takes Buffers; its typings declare the utf8 mode's string.
  const lines = new LineQueue(destination as unknown as ByteDestination);
  setInterval(() => lines.flush(), FLUSH_MS).unref();
  return pino({ level: level ?? process.env.SWITCHBOARD_LOG_LEVEL ?? 'info', base: { service: 'switchboard' }, timestamp: isoTime }, lines);
}

/** What LineQueue needs of sonic-boom (buffer mode). */
interface ByteDestination {
  write(chunk: Buffer): unknown;
  flush(cb?: (err?: Error) => void): void;
  flushSync(): void;
}

/** Queues holding lines not yet handed to their destination: written out synchronously if the process exits. */
const unwritten = new Set<LineQueue>();
process.once('exit', () => {
  for (const queue of unwritten) queue.flushSync();
});

/**
 * Whole lines in, in the order written; out once per event-loop turn as one chunk. A line is never split
 * or interleaved with another, since only whole lines are queued and one queue serves every writer.
 */
export class LineQueue {
  readonly #destination: ByteDestination;
  #lines: string[] = [];

  constructor(destination: ByteDestination) {
    this.#destination = destination;
  }

  /** pino's stream interface: one formatted line, newline included. */
  write(line: string): boolean {
    if (this.#lines.push(line) === 1) {
      unwritten.add(this);
      setImmediate(this.#handOver);
    }
    return true;
  }

  /** pino's `logger.flush(cb)`: what is queued, then what the destination holds. */
  flush(cb?: (err?: Error) => void): void {
    this.#handOver();
    this.#destination.flush(cb);
  }

  flushSync(): void {
    this.#handOver();
    this.#destination.flushSync();
  }

  readonly #handOver = (): void => {
    if (this.#lines.length === 0) return;
    const chunk = Buffer.from(this.#lines.length === 1 ? (this.#lines[0] as string) : this.#lines.join(''));
    this.#lines = [];
    unwritten.delete(this);
    this.#destination.write(chunk);
  };
}

let second = NaN;
let secondPrefix = '';

/**
 * pino's `stdTimeFunctions.isoTime` (`,"time":"2026-11-23T22:52:17.042Z"`), without a Date and its
 * formatting on every line: the text up to the second is kept until the second changes (at 10,000 lines a
 * second the access line otherwise paid about 1 us for it).
 */
export function isoTime(now: number = Date.now()): string {
  const ms = now % 1000;
  if (now - ms !== second) {
    second = now - ms;
    secondPrefix = ',"time":"' + new Date(second).toISOString().slice(0, 20);
  }
  return secondPrefix + (ms < 10 ? '00' : ms < 100 ? '0' : '') + ms + 'Z"';
}

/** Flushes buffered lines; call before exiting. */
export function flushLogger(logger: Logger): void {
  try {
    logger.flush();
  } catch {
    // a closed stdout must not turn a clean shutdown into a crash
  }
}
