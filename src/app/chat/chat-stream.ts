/**
 * A streamed turn: upstream SSE decoded incrementally, each chunk re-stamped on the fast path or fully
 * normalized, written as it arrives with uWS backpressure respected, and everything one upstream read
 * brings coalesced into one corked write (BASELINE: per-chunk corks cost 2.5x).
 *
 * What a read costs is what a streamed turn adds over a bare proxy (issue 35: a model sends one chunk per
 * read), so a read makes no closure, promise or event object. For a chat client, a read that is one
 * whole `data:` event in valid UTF-8 (what a model server sends a chunk at a time) is read as bytes: a
 * fast-path chunk's frame is copied from the read into a reused buffer and written as bytes, no string
 * made (uWS would encode a string to UTF-8 again). Any other read is decoded (without the UTF-8 decoder
 * when it ends on a character boundary) and the SSE decoder hands over slices of it. The idle deadline reads a timestamp when its
 * timer fires instead of being re-armed on every read.
 */
import { isUtf8 } from 'node:buffer';
import { StringDecoder } from 'node:string_decoder';
import { borrowBuilder, returnBuilder, type ByteBuilder } from '../../byte-builder.js';
import { ChunkNormalizer } from '../../core/chat/chunk-normalizer.js';
import { ChunkRestamper } from '../../core/chat/chunk-restamp.js';
import type { TurnUsage } from '../../core/chat/turn-context.js';
import { GatewayError } from '../../errors.js';
import { SseDecoder } from '../../upstream/sse-decoder.js';
import type { AnswerReader, AnswerStream } from '../../upstream/answer-stream.js';
import type { UpstreamAbort } from '../../upstream/upstream-client.js';
import { mapUpstreamError } from '../../upstream/upstream-errors.js';
import type { StreamReshaper } from '../turn-io.js';
import type { Outcome, TurnRequest } from './chat-dispatch.js';

const DONE = 'data: [DONE]\n\n';

function errorFrame(e: GatewayError): string {
  return `data: ${JSON.stringify(e.toEnvelope())}\n\n`;
}

/** SPEC "Streaming events": a timeout is an SSE event named `error`, type timeout_error; no [DONE] follows. */
export function timeoutEvent(message: string): string {
  return `event: error\ndata: ${JSON.stringify({ error: { message, type: 'timeout_error', code: 'timeout', param: null } })}\n\n`;
}

/** How a stream's turn is charged, and its prompt estimate (only called when the stream brought no usage chunk). */
export interface StreamAccounting {
  readonly charge: (o: Outcome, u: TurnUsage | null) => void;
  readonly promptEstimate: () => number;
}

export function streamTurn(t: TurnRequest, res: AnswerStream, controller: UpstreamAbort, timedOut: () => boolean, accounting: StreamAccounting): Promise<void> {
  return new Promise<void>((resolve) => new TurnStream(t, res, controller, timedOut, accounting, resolve).start());
}

/** The answer's one reader (answer-stream.ts): each read of the model server's socket comes here as it is. */
class TurnStream implements AnswerReader {
  readonly #t: TurnRequest;
  readonly #res: AnswerStream;
  readonly #controller: UpstreamAbort;
  readonly #timedOut: () => boolean;
  readonly #accounting: StreamAccounting;
  readonly #resolve: () => void;
  readonly #normalizer: ChunkNormalizer;
  readonly #restamper: ChunkRestamper;
  readonly #decoder = new SseDecoder();
  /** The sink's own shape for the stream (the Responses reply), or null: chat frames as they are. */
  readonly #shaper: StreamReshaper | null;
  /** Made at the first read that is not plain ASCII; from then on every read goes through it. */
  #utf8: StringDecoder | null = null;
  /**
   * What the current upstream read brought, for one write once its microtasks are done: text, or bytes once
   * a chunk was re-stamped from the read's bytes (a chat client's only). The bytes' builder is borrowed from
   * the process's spares while bytes wait, and given back once they are written.
   */
  #pending = '';
  #bytes: ByteBuilder | null = null;
  /** Whether the client takes chat frames as they are (no reshaping sink): only then are reads re-stamped as bytes. */
  readonly #chatSink: boolean;
  #flushScheduled = false;
  #sawDone = false;
  #failed = false;
  #ended = false;
  #timedOutIdle = false;
  /** performance.now() of the last upstream read (monotonic, unlike Date.now()): the idle timer checks it when it fires. */
  #lastRead = performance.now();
  #idle: NodeJS.Timeout | null = null;
  // Bound once per turn: the per-read path passes these, and makes no closure of its own.
  readonly #flush = (): void => this.#flushPending();
  readonly #onData = (data: string): void => this.#handle(data);
  readonly #onIdle = (): void => this.#idleCheck();
  readonly #resume = (): void => this.#res.resume();

  constructor(t: TurnRequest, res: AnswerStream, controller: UpstreamAbort, timedOut: () => boolean, accounting: StreamAccounting, resolve: () => void) {
    this.#t = t;
    this.#res = res;
    this.#controller = controller;
    this.#timedOut = timedOut;
    this.#accounting = accounting;
    this.#resolve = resolve;
    this.#normalizer = new ChunkNormalizer(t.turn);
    this.#restamper = new ChunkRestamper(t.turn);
    this.#shaper = t.reply.reshaper ?? null;
    this.#chatSink = this.#shaper === null;
  }

  start(): void {
    const { reply } = this.#t;
    reply.setHeader('Cache-Control', 'no-cache');
    reply.beginStream(200, 'text/event-stream');
    this.#idle = setTimeout(this.#onIdle, this.#t.deadlines.idleMs);
    // A graceful stop's deadline ends the stream the way SPEC ends a mid-stream error, billed for what was
    // delivered, instead of cutting it after an ordinary chunk (clients could not tell it from a fault).
    reply.onDrainDeadline(() => {
      this.#flushNormalizer();
      this.#send(errorFrame(new GatewayError('service_draining', { message: 'The server is shutting down; the stream was ended before the model finished. Retry the request.' })) + DONE);
      this.#finish('drained');
      this.#controller.abort();
    });
    this.#res.read(this);
  }

  /** One read of the model server's socket (AnswerReader). */
  onAnswerData(buf: Buffer): void {
    if (this.#ended) return;
    this.#lastRead = performance.now();
    if (!(this.#chatSink && this.#utf8 === null && this.#decoder.empty && this.#eventFromBytes(buf))) this.#decoder.pushData(this.#text(buf), this.#onData);
    const log = this.#t.req.log;
    if (log.firstTokenMs === undefined && this.#normalizer.tokenChunks > 0) log.firstTokenMs = performance.now() - this.#t.req.startedAt;
  }

  /**
   * A read that is one whole `data:` line and its blank line, in valid UTF-8 (a model's read when it sends
   * a chunk at a time): a common chunk is re-stamped from the read's bytes, anything else is decoded and
   * handled alone. False for any other read, which the SSE decoder takes; a read of several events (a
   * stream that arrives all at once) is cheaper there, joined into one string and encoded once by uWS.
   * The checks are ordered cheapest first: a read of several events is turned away by its first newline.
   */
  #eventFromBytes(read: Buffer): boolean {
    const end = read.length - 2;
    if (read[end + 1] !== 0x0a || read[end] !== 0x0a || read.indexOf(0x0a) !== end || read.indexOf(0x0d) !== -1 || !isUtf8(read)) return false;
    // Latin-1: a character a byte, so an index in the text is an offset in the read.
    const text = read.toString('latin1', 0, end);
    if (!text.startsWith('data: ')) return false;
    if (this.#failed) return true;
    if (this.#restamper.frameRead(text.slice(6), read, 6, this.#bytesOut())) {
      this.#normalizer.countRestamped(this.#restamper.hadContent);
      this.#scheduleFlush();
    } else this.#handle(read.toString('utf8', 6, end), false);
    return true;
  }

  /**
   * A read that ends on an ASCII byte (a model's reads end with an event's blank line) ends on a character
   * boundary, and decodes on its own; one that ends inside a character goes through the UTF-8 decoder, which
   * keeps the split character for the next read, and every read after it does too.
   */
  #text(buf: Buffer): string {
    if (this.#utf8 === null && (buf[buf.length - 1] ?? 0x80) < 0x80) return buf.toString();
    return (this.#utf8 ??= new StringDecoder('utf8')).write(buf);
  }

  /** The idle deadline: the model sent nothing for idleMs since its last read, or the timer waits out the rest. */
  #idleCheck(): void {
    const idleMs = this.#t.deadlines.idleMs;
    const left = this.#lastRead + idleMs - performance.now();
    if (left >= 1) {
      this.#idle = setTimeout(this.#onIdle, Math.ceil(left));
      return;
    }
    this.#timedOutIdle = true;
    this.#controller.abort();
  }

  /** One event's data; `fast`: whether the fast path may still take it (not when its bytes were refused). */
  #handle(data: string, fast = true): void {
    if (this.#failed) return;
    if (data === '[DONE]') {
      this.#sawDone = true;
      return;
    }
    const frames = !fast ? null : this.#shaper === null ? this.#restamper.frame(data) : this.#reshaped(data, this.#shaper);
    if (frames !== null) {
      this.#normalizer.countRestamped(this.#restamper.hadContent);
      this.#queue(frames);
      return;
    }
    const usage = this.#restamper.usageFrame(data);
    if (usage !== null) {
      this.#normalizer.countUsage(usage.usage);
      // No frame: the client did not ask for usage, and the chunk says nothing (as on the full path).
      if (usage.frame !== null) this.#queue(this.#shaper === null ? usage.frame : this.#shaper.chunk({ choices: [], usage: JSON.parse(usage.usageJson) as unknown }));
      return;
    }
    let chunk: Record<string, unknown>;
    try {
      chunk = JSON.parse(data) as Record<string, unknown>;
    } catch {
      return;
    }
    if (chunk.error) {
      this.#failed = true;
      const code = (chunk.error as { code?: unknown }).code;
      this.#send(errorFrame(mapUpstreamError(typeof code === 'number' ? code : 500, data, null)) + DONE);
      return;
    }
    const normalized = this.#normalizer.normalize(chunk);
    if (normalized) this.#sendJson(normalized);
  }

  /**
   * A reshaping sink takes content text as text and any other chunk as the normalized object, never as a
   * re-stamped chat frame it would parse again; on the fast path that object is read from the choices alone.
   */
  #reshaped(data: string, shaper: StreamReshaper): string | null {
    const piece = this.#restamper.reshapable(data);
    return piece === null ? null : typeof piece === 'string' ? shaper.content(piece) : shaper.chunk(piece);
  }

  // What one read of the upstream socket brings goes out in one write, after the microtasks of that read:
  // no later than the bytes arrived (time to first token is what streaming clients feel), and when the
  // upstream's end came in the same read (its 'end' is a nextTick, which runs before them), the head, the
  // chunks and the end leave in a single write (four before: a syscall each, and four packets to parse).
  #send(text: string): void {
    this.#queue(this.#shaper === null ? text : this.#shaper.translate(text));
  }

  /** Bytes for the client, as they will be written (a reshaping sink's frames already made). */
  #queue(out: string): void {
    // Text after bytes joins them, to keep the order; otherwise text is joined as text and encoded once.
    if (this.#bytes !== null && this.#bytes.length > 0) this.#bytes.text(out);
    else this.#pending += out;
    this.#scheduleFlush();
  }

  /** Where a frame made from bytes goes: after any text waiting, which joins the bytes first. */
  #bytesOut(): ByteBuilder {
    const bytes = (this.#bytes ??= borrowBuilder());
    if (this.#pending !== '') {
      bytes.text(this.#pending);
      this.#pending = '';
    }
    return bytes;
  }

  #scheduleFlush(): void {
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      queueMicrotask(this.#flush);
    }
  }

  #sendJson(chunk: Record<string, unknown>): void {
    if (this.#shaper === null) this.#send(`data: ${JSON.stringify(chunk)}\n\n`);
    else this.#queue(this.#shaper.chunk(chunk));
  }

  #flushNormalizer(): void {
    for (const chunk of this.#normalizer.flush()) this.#sendJson(chunk);
  }

  #flushPending(): void {
    this.#flushScheduled = false;
    const out = this.#takePending();
    if (out !== null) this.#write(out);
    this.#returnBytes();
  }

  #write(out: Buffer | string): void {
    const { reply } = this.#t;
    // After the end (or the client's abort) nothing may touch the response: uWS has let go of it.
    if (!reply.open) return;
    this.#noteFirstByte();
    if (!(typeof out === 'string' && this.#shaper !== null ? this.#shaper.write(out) : reply.write(out))) {
      this.#res.pause();
      reply.onWritable(this.#resume);
    }
  }

  /** What is pending, and nothing pending after; null when nothing is. */
  #takePending(): Buffer | string | null {
    // Never both: text that came after bytes joined them (#queue), bytes that came after text took it (#bytesOut).
    if (this.#bytes !== null && this.#bytes.length > 0) return this.#bytes.take();
    const out = this.#pending;
    this.#pending = '';
    return out === '' ? null : out;
  }

  /** Once what was taken is written (the sink copies what it keeps: TurnSink.write). */
  #returnBytes(): void {
    if (this.#bytes === null) return;
    returnBuilder(this.#bytes);
    this.#bytes = null;
  }

  #noteFirstByte(): void {
    const { req } = this.#t;
    if (req.log.ttftMs === undefined) req.log.ttftMs = performance.now() - req.startedAt;
  }

  onAnswerEnd(): void {
    if (this.#ended) return;
    this.#decoder.pushData(this.#utf8?.end() ?? '', this.#onData);
    for (const event of this.#decoder.flush()) this.#handle(event.data);
    this.#flushNormalizer();
    if (this.#failed) return this.#finish('error');
    if (!this.#sawDone) {
      this.#send(errorFrame(new GatewayError('internal_error', { message: 'The model server ended the stream before it was complete.' })) + DONE);
      return this.#finish('error');
    }
    this.#send(DONE);
    this.#finish('completed');
  }

  onAnswerError(): void {
    if (this.#ended) return;
    const t = this.#t;
    if (t.req.aborted) return this.#finish('aborted');
    if (this.#timedOut() || this.#timedOutIdle) {
      const which = this.#timedOutIdle ? `sent nothing for ${t.deadlines.idleMs / 1000} s` : `did not finish within ${t.deadlines.requestMs / 1000} s`;
      this.#send(timeoutEvent(`The model ${which}.`));
      return this.#finish('timeout');
    }
    this.#send(errorFrame(new GatewayError('internal_error', { message: 'The connection to the model server failed mid-stream.' })) + DONE);
    this.#finish('error');
  }

  #finish(outcome: Outcome): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#idle !== null) clearTimeout(this.#idle);
    const { req, reply } = this.#t;
    // Charged before the stream's end is handed to the socket (see chat-dispatch.ts bufferedTurn).
    const usage = this.#normalizer.usage ?? this.#normalizer.estimatedUsage(this.#accounting.promptEstimate());
    const last = this.#takePending();
    // Noted before the charge: a fast stream's first bytes may all go out here, and its row records the time.
    if (last !== null && reply.open) this.#noteFirstByte();
    this.#accounting.charge(outcome, usage);
    if (this.#shaper === null) reply.endStream(last ?? undefined);
    else this.#shaper.end(typeof last === 'string' ? last : ''); // a reshaping sink's are text
    this.#returnBytes();
    // The latency measurements the router's objectives are judged on (issue 14; main.ts feeds them on).
    const firstTokenMs = req.log.firstTokenMs;
    if (outcome === 'completed' && firstTokenMs !== undefined && usage.completionTokens >= 2) {
      req.log.tpotMs = (performance.now() - req.startedAt - firstTokenMs) / (usage.completionTokens - 1);
    }
    this.#resolve();
  }
}
