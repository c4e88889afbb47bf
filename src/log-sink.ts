/**
 * Where every log line goes (pino's and the access lines of src/access-line.ts): each line is encoded once,
 * straight into a chunk buffer, and a chunk goes to the file descriptor with one asynchronous write(2) once
 * it holds MIN_BYTES, or at the next flush (log.ts flushes every 250 ms, so a quiet server still shows its
 * lines promptly).
 *
 * Why not sonic-boom (pino's destination), which this replaced: a line went through an array, a join per
 * event-loop turn, a Buffer.from and sonic-boom's own copy into its buffer before reaching write(2), about
 * 1 us a line more than this (bench/access-log.ts; bench/RESULTS.md, the reading). sonic-boom also let
 * lines pile up without bound behind a destination that stopped taking them.
 *
 * A line is never split across two writes, so lines never interleave mid-line with other writers of the
 * same file. If the file stops taking bytes (a stopped pipe reader), at most MAX_PENDING bytes wait; lines
 * beyond are dropped and counted, and the count is written as a line once writing resumes.
 */
import { write as fsWrite, writeSync } from 'node:fs';

const CHUNK_BYTES = 64 * 1024;
const MIN_BYTES = 48 * 1024;
const MAX_PENDING = 64 * 1024 * 1024;
/** How long a destination that answered EAGAIN (a full non-blocking pipe) is given before the next try. */
const BUSY_RETRY_MS = 100;

/** fs.write's signature, and fs.writeSync's. */
export type WriteFn = (fd: number, buffer: Buffer, offset: number, length: number, position: null, cb: (err: NodeJS.ErrnoException | null, written: number) => void) => void;
export type WriteSyncFn = (fd: number, buffer: Buffer, offset: number, length: number) => number;

/** The file's writes (tests hand in their own) and the bound on bytes waiting for them. */
export interface LogSinkOptions {
  readonly write?: WriteFn;
  readonly writeSync?: WriteSyncFn;
  readonly maxPendingBytes?: number;
}

export class LogSink {
  readonly #fd: number;
  readonly #maxPending: number;
  readonly #write: WriteFn;
  readonly #writeSync: WriteSyncFn;
  #chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  #used = 0;
  /** Sealed chunks in order; the first is being written when `#writing`, from `#offset`. */
  readonly #sealed: Buffer[] = [];
  #pendingBytes = 0;
  #offset = 0;
  #writing = false;
  #dropped = 0;
  /** A write failed with something other than EAGAIN (a closed stdout): nothing more is written. */
  #broken = false;
  #waiters: ((err?: Error) => void)[] = [];

  constructor(fd: number, options: LogSinkOptions = {}) {
    this.#fd = fd;
    this.#write = options.write ?? fsWrite;
    this.#writeSync = options.writeSync ?? writeSync;
    this.#maxPending = options.maxPendingBytes ?? MAX_PENDING;
  }

  /** pino's stream interface: one formatted line, newline included. */
  write(line: string): boolean {
    if (this.#broken) return true;
    if (this.#pendingBytes + this.#used > this.#maxPending) {
      this.#dropped++;
      return true;
    }
    // Three bytes per UTF-16 unit at most: a line that might not fit starts a new chunk, whole.
    if (this.#used + line.length * 3 > CHUNK_BYTES) {
      this.#seal();
      if (line.length * 3 > CHUNK_BYTES) {
        this.#push(Buffer.from(line, 'utf8'));
        this.#next();
        return true;
      }
    }
    this.#used += this.#chunk.write(line, this.#used);
    if (this.#used >= MIN_BYTES) {
      this.#seal();
      this.#next();
    }
    return true;
  }

  /** pino's `logger.flush(cb)`: everything written so far reaches the file, then `cb`. */
  flush(cb?: (err?: Error) => void): void {
    this.#seal();
    if (cb) {
      if (this.#broken) {
        cb(new Error('the log destination failed'));
        return;
      }
      if (!this.#writing && this.#sealed.length === 0) {
        cb();
        return;
      }
      this.#waiters.push(cb);
    }
    this.#next();
  }

  /**
   * At exit: what is queued, written synchronously (a pipe that stays full gives up after a few tries). A
   * chunk whose asynchronous write is under way is left to it, as sonic-boom does: writing it here as well
   * could print its lines twice.
   */
  flushSync(): void {
    this.#seal();
    const first = this.#writing ? 1 : 0;
    let offset = this.#writing ? 0 : this.#offset;
    let i = first;
    let busy = 0;
    while (!this.#broken && i < this.#sealed.length && busy < 50) {
      const buf = this.#sealed[i] as Buffer;
      try {
        offset += this.#writeSync(this.#fd, buf, offset, buf.length - offset);
        busy = 0;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EAGAIN') busy++;
        else this.#broken = true;
        continue;
      }
      if (offset >= buf.length) {
        i++;
        offset = 0;
      }
    }
    for (const done of this.#sealed.splice(first, i - first)) this.#pendingBytes -= done.length;
    if (first === 0) this.#offset = offset;
  }

  #seal(): void {
    if (this.#used === 0) return;
    // The sealed chunk is the written part of this buffer; the next lines go to a fresh one.
    this.#push(this.#chunk.subarray(0, this.#used));
    this.#chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    this.#used = 0;
  }

  #noteDropped(): void {
    const line = `{"level":40,"time":"${new Date().toISOString()}","msg":"log lines dropped: the log destination did not take them in time","dropped":${this.#dropped}}\n`;
    this.#dropped = 0;
    this.#push(Buffer.from(line, 'utf8'));
  }

  #push(buf: Buffer): void {
    this.#sealed.push(buf);
    this.#pendingBytes += buf.length;
  }

  #shift(): void {
    const done = this.#sealed.shift();
    this.#pendingBytes -= done?.length ?? 0;
    this.#offset = 0;
  }

  #next(): void {
    if (this.#writing) return;
    // Everything that waited is written: now the count of what could not wait.
    if (this.#dropped > 0 && this.#sealed.length === 0 && !this.#broken) this.#noteDropped();
    const head = this.#sealed[0];
    if (head === undefined || this.#broken) {
      this.#settle(this.#broken ? new Error('the log destination failed') : undefined);
      return;
    }
    this.#writing = true;
    this.#write(this.#fd, head, this.#offset, head.length - this.#offset, null, this.#written);
  }

  readonly #written = (err: NodeJS.ErrnoException | null, n: number): void => {
    this.#writing = false;
    if (err) {
      if (err.code === 'EAGAIN' || err.code === 'EBUSY') {
        setTimeout(() => this.#next(), BUSY_RETRY_MS).unref();
        return;
      }
      // A closed or failing stdout must not take the gateway down: logging stops, serving goes on.
      this.#broken = true;
      this.#sealed.length = 0;
      this.#pendingBytes = 0;
      this.#next();
      return;
    }
    const head = this.#sealed[0] as Buffer;
    this.#offset += n;
    if (this.#offset >= head.length) this.#shift();
    this.#next();
  };

  #settle(err?: Error): void {
    if (this.#waiters.length === 0) return;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const cb of waiters) cb(err);
  }
}
