/**
 * A streamed turn: upstream SSE decoded incrementally, each chunk re-stamped on the fast path or fully
 * normalized, written as it arrives with uWS backpressure respected, and everything one upstream read
 * brings coalesced into one corked write (BASELINE: per-chunk corks cost 2.5x).
 *
 * What a read costs is what a streamed turn adds over a bare proxy (issue 35: a model sends one chunk per
 * read), so a read makes no closure, promise or event object: a read ending on a character boundary
 * decodes without the UTF-8 decoder, the SSE decoder hands over slices of the read, a fast-path chunk
 * is one string, and the idle deadline reads a timestamp when its timer fires instead of being re-armed
 * on every read.
 */
import { StringDecoder } from 'node:string_decoder';
import { ChunkNormalizer } from '../../core/chat/chunk-normalizer.js';
import { ChunkRestamper } from '../../core/chat/chunk-restamp.js';
import { reportedError } from '../../core/chat/reported-error.js';
import type { TurnUsage } from '../../core/chat/turn-context.js';
import { GatewayError } from '../../errors.js';
import { SseDecoder } from '../../upstream/sse-decoder.js';
import type { AnswerReader, AnswerStream } from '../../upstream/answer-stream.js';
import type { UpstreamAbort } from '../../upstream/upstream-client.js';
import { mapReportedError } from '../../upstream/upstream-errors.js';
import { DONE_FRAME as DONE, errorFrame, timeoutEvent } from '../sse-frames.js';
import type { StreamReshaper } from '../turn-io.js';
import type { Outcome, TurnRequest } from './chat-dispatch.js';


/**
 * How a stream's turn is charged (with the code of the error frame it ended with, null when none), and its
 * prompt estimate (only called when the stream brought no usage chunk).
 */
export interface StreamAccounting {
  readonly charge: (o: Outcome, u: TurnUsage | null, errorCode: string | null) => void;
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
  /** What the current upstream read brought, for one write once its microtasks are done. */
  #pending = '';
  #flushScheduled = false;
  #sawDone = false;
  /** The code of the error frame the model server's own error became; null while none came. */
  #failedCode: string | null = null;
  #ended = false;
  #timedOutIdle = false;
  /** performance.now() of the last upstream read (monotonic, unlike Date.now()): the idle timer checks it when it fires. */
  #lastRead = performance.now();
  #idle: NodeJS.Timeout | null = null;
  // Bound once per turn: the per-read path passes these, and makes no closure of its own.
  readonly #flush = (): void => this.#flushPending();
  readonly #onData = (data: string, event: string | null): void => this.#handle(data, event);
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
  }

  start(): void {
    const { reply } = this.#t;
    if (this.#shaper !== null && this.#t.turn.adjustedEffort !== null) this.#shaper.adjustedEffort(this.#t.turn.adjustedEffort);
    reply.setHeader('Cache-Control', 'no-cache');
    reply.beginStream(200, 'text/event-stream');
    this.#idle = setTimeout(this.#onIdle, this.#t.deadlines.idleMs);
    // A graceful stop's deadline ends the stream the way SPEC ends a mid-stream error, billed for what was
    // delivered, instead of cutting it after an ordinary chunk (clients could not tell it from a fault).
    reply.onDrainDeadline(() => {
      this.#flushNormalizer();
      this.#failWith(new GatewayError('service_draining', { message: 'The server is shutting down; the stream was ended before the model finished. Retry the request.' }), 'drained');
      this.#controller.abort();
    });
    this.#res.read(this);
  }

  /** One read of the model server's socket (AnswerReader). */
  onAnswerData(buf: Buffer): void {
    if (this.#ended) return;
    this.#lastRead = performance.now();
    this.#decoder.pushData(this.#text(buf), this.#onData);
    const log = this.#t.req.log;
    if (log.firstTokenMs === undefined && this.#normalizer.tokenChunks > 0) log.firstTokenMs = performance.now() - this.#t.req.startedAt;
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

  /** One event of the model server's stream; `event` its SSE name (null on a model's chunks). */
  #handle(data: string, event: string | null): void {
    if (this.#failedCode !== null) return;
    if (data === '[DONE]') {
      this.#sawDone = true;
      return;
    }
    const frames = this.#shaper === null ? this.#restamper.frame(data) : this.#reshaped(data, this.#shaper);
    if (frames !== null) {
      this.#normalizer.countRestamped(this.#restamper.contentChars);
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
      // An `event: error` in plain text is still the server's error, its text the message.
      if (event !== 'error') return;
      chunk = { message: data };
    }
    // An error report delivers no choice (OpenAI's {error}, vLLM's {"object":"error"}, an `event: error`):
    // only such a chunk is looked at, so a chunk that delivers one pays nothing for the check. The cut-off
    // answer is then no answer (SPEC principle 4): the error frame and [DONE], never a chunk or a success.
    const choices = chunk.choices;
    if (event === 'error' || !Array.isArray(choices) || choices.length === 0) {
      const reported = reportedError(chunk, event === 'error');
      if (reported !== null) {
        const e = mapReportedError(reported);
        this.#failedCode = e.code;
        this.#send(errorFrame(e) + DONE);
        return;
      }
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
    this.#pending += out;
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
    const out = this.#pending;
    if (!out) return;
    this.#pending = '';
    const { reply } = this.#t;
    // After the end (or the client's abort) nothing may touch the response: uWS has let go of it.
    if (!reply.open) return;
    this.#noteFirstByte();
    if (!(this.#shaper === null ? reply.write(out) : this.#shaper.write(out))) {
      this.#res.pause();
      reply.onWritable(this.#resume);
    }
  }

  #noteFirstByte(): void {
    const { req } = this.#t;
    if (req.log.ttftMs === undefined) req.log.ttftMs = performance.now() - req.startedAt;
  }

  onAnswerEnd(): void {
    if (this.#ended) return;
    this.#decoder.pushData(this.#utf8?.end() ?? '', this.#onData);
    for (const event of this.#decoder.flush()) this.#handle(event.data, event.event);
    this.#flushNormalizer();
    if (this.#failedCode !== null) return this.#finish('error', this.#failedCode);
    // Without [DONE] the stream is still complete once its choice has finished (some servers close right
    // after the finish and usage chunks): it ends with [DONE] and is billed completed like any other.
    // Before that, the answer was cut off: an error, not a substitute answer (SPEC principle 4).
    const finished = this.#restamper.finished || this.#normalizer.finished;
    if (!this.#sawDone && !finished) return this.#failWith(new GatewayError('internal_error', { message: 'The model server ended the stream before it was complete.' }));
    // No usage came: a client that asked for it gets the estimate the turn is billed, as the final chunk.
    if (this.#normalizer.usage === null && this.#t.turn.streamUsage) {
      this.#sendJson(this.#normalizer.estimatedUsageChunk(this.#normalizer.estimatedUsage(this.#accounting.promptEstimate())));
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
      return this.#finish('timeout', 'timeout');
    }
    this.#failWith(new GatewayError('internal_error', { message: 'The connection to the model server failed mid-stream.' }));
  }

  /** Ends the stream as SPEC "Streaming events" ends a mid-stream error: the envelope's data frame, then [DONE]. */
  #failWith(e: GatewayError, outcome: Outcome = 'error'): void {
    this.#send(errorFrame(e) + DONE);
    this.#finish(outcome, e.code);
  }

  /** `errorCode`: the code the client's error frame or event carried, for the usage row (null: none was sent). */
  #finish(outcome: Outcome, errorCode: string | null = null): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#idle !== null) clearTimeout(this.#idle);
    const { req, reply } = this.#t;
    // Charged before the stream's end is handed to the socket (see chat-dispatch.ts bufferedTurn).
    const usage = this.#normalizer.usage ?? this.#normalizer.estimatedUsage(this.#accounting.promptEstimate());
    const last = this.#pending;
    this.#pending = '';
    // Noted before the charge: a fast stream's first bytes may all go out here, and its row records the time.
    if (last && reply.open) this.#noteFirstByte();
    this.#accounting.charge(outcome, usage, errorCode);
    if (this.#shaper === null) reply.endStream(last || undefined);
    else this.#shaper.end(last);
    // The latency measurements the router's objectives are judged on (issue 14; main.ts feeds them on).
    const firstTokenMs = req.log.firstTokenMs;
    if (outcome === 'completed' && firstTokenMs !== undefined && usage.completionTokens >= 2) {
      req.log.tpotMs = (performance.now() - req.startedAt - firstTokenMs) / (usage.completionTokens - 1);
    }
    this.#resolve();
  }
}
