/**
 * The reply a Responses API turn answers through: the chat path (chat-turn.ts) writes a chat completion
 * or chat SSE chunks into it, and it writes the Response object or the Responses streaming events to the
 * client. `finish` (store the response, append to the conversation, emit the event) is committed before
 * the terminal answer is written, so a client that retrieves the response right after reading it finds it,
 * on any replica: the terminal answer and the stream's end wait for the commit (a round trip with
 * PostgreSQL), and the route awaits `settled()` before its request ends.
 */
import type { Item, NewId } from '../../core/responses/input-items.js';
import { ResponseStreamTranslator } from '../../core/responses/stream-events.js';
import { outputOfCompletion, responseObject, statusOf, type ResponseHeader, type ResponseState } from '../../core/responses/translate.js';
import { SseDecoder } from '../../upstream/sse-decoder.js';
import type { StreamReshaper, TurnSink } from '../turn-io.js';
import { deltaItemPart, frame, responseEventFrame, textDeltaFrame } from './event-frames.js';

/** Stores the outcome; `bodyJson`: the body as the answer serialized it, when it did (stored as it is). */
export type FinishResponse = (state: ResponseState, body: Record<string, unknown>, bodyJson?: string) => Promise<void>;

/**
 * A chat chunk as the streamed chat path re-stamps it (core/chat/chunk-restamp.ts) when it carries nothing
 * but content text: one choice, no logprobs, no finish reason, at most `usage: null`. Group 1 is the
 * content as its JSON string. Anchored at both ends, alternatives disjoint: linear.
 */
const CONTENT_ONLY_CHUNK = new RegExp(
  '^\\{"id":"[^"\\\\]*","object":"chat\\.completion\\.chunk","created":\\d+,"model":"(?:[^"\\\\]|\\\\.)*","service_tier":"[a-z]+"' +
    '(?:,"x_adjusted_reasoning_effort":"[^"\\\\]*")?,"choices":\\[\\{"index":\\d+,"delta":\\{(?:"role":"assistant",)?"content":("(?:[^"\\\\]|\\\\.)*")\\},' +
    '"logprobs":null,"finish_reason":null(?:,"stop_reason":null)?\\}\\](?:,"usage":null)?\\}$',
);

/**
 * The content text of a chunk that carries nothing else (CONTENT_ONLY_CHUNK), or null when the chunk must
 * be parsed: reading one JSON string costs a fraction of parsing the chunk (issue 35).
 */
export function contentOnlyText(data: string): string | null {
  const match = CONTENT_ONLY_CHUNK.exec(data);
  return match ? (JSON.parse(match[1] as string) as string) : null;
}

export class ResponsesReply implements TurnSink {
  readonly #reply: TurnSink;
  readonly #header: ResponseHeader;
  readonly #newId: NewId;
  readonly #finish: FinishResponse;
  readonly #translator: ResponseStreamTranslator;
  readonly #decoder = new SseDecoder();
  /** What the chat frames of one write() translate to, gathered for one write to the client. */
  #out = '';
  readonly #onData = (data: string): void => {
    if (!this.#done) this.#out += this.#translate(data);
  };
  #done = false;
  /** endStream was called; the terminal frames, once stored, are left for it to send with the end. */
  #ending = false;
  #terminal: string | null = null;
  /** The opening events were written (by beginStream, or at once for a streamed background response). */
  #opened = false;
  /** The stored outcome's commit, then the writes that wait for it; rejected when storing failed. */
  #tail: Promise<void> = Promise.resolve();
  /**
   * Frames not yet handed to the client: the opening events, and what the stream's last read brought. They
   * go out with the next write or the end, in one socket write (the chat path's rule, chat-stream.ts: a
   * syscall and a packet each were 3 writes a turn where the chat turn makes 1, issue 35), and at the
   * latest once this I/O phase is over (setImmediate), so a model still thinking does not hold them back.
   * Once the turn's end is read they wait for the terminal event instead, which waits for the store only.
   */
  #held = '';
  /** The open text item's id and its deltas' item members (deltaItemPart), made at its second delta. */
  #deltaItemId = '';
  #deltaItem = '';
  #heldFlush: NodeJS.Immediate | null = null;
  readonly #flushHeld = (): void => {
    this.#heldFlush = null;
    // Once the turn's end is read, what is held goes out with the terminal event, which waits only for
    // the store (a loop turn or a round trip): one write where this would make it two (issue 35).
    if (this.#done) return;
    if (this.#held !== '' && this.#reply.open) this.#reply.write(this.#takeHeld(''));
  };

  /** The chat stream hands a streamed turn over piece by piece (turn-io.ts StreamReshaper). */
  readonly reshaper: StreamReshaper = {
    content: (escaped) => this.#contentFrames(escaped),
    chunk: (chunk) => this.#chunkFrames(chunk),
    translate: (chatFrames) => this.#translated(chatFrames),
    write: (frames) => this.#writeFrames(frames),
    end: (frames) => this.#endWith(frames),
    adjustedEffort: (effort) => {
      this.#adjustedEffort = effort;
    },
  };
  /** The effort the chat turn was sent with, when SPEC's mapping changed the request's (reported on the Response). */
  #adjustedEffort: string | null = null;

  constructor(reply: TurnSink, header: ResponseHeader, newId: NewId, finish: FinishResponse) {
    this.#reply = reply;
    this.#header = header;
    this.#newId = newId;
    this.#finish = finish;
    this.#translator = new ResponseStreamTranslator(newId, header.namespaces);
  }

  get open(): boolean {
    return this.#reply.open;
  }

  /** Whether the Response reached its end (completed, incomplete or failed). */
  get finished(): boolean {
    return this.#done;
  }

  /** Resolves once the outcome is stored and the answer written; rejects when storing it failed. */
  settled(): Promise<void> {
    return this.#tail;
  }

  /**
   * Stores the outcome; `then` (the terminal answer) runs once it is committed. When storing fails, a
   * foreground answer still goes out, re-rendered by `unstored` with `store: false`: the model turn was made
   * and billed, and a retryable error instead would have the client pay a second turn for one answer
   * (docs/decisions.md "A Response that cannot be stored"). `unstored` absent (a refusal, no answer to
   * give), or a background response (its client reads the stored row): the failure is settled()'s.
   */
  #store(state: ResponseState, body: Record<string, unknown>, then: () => void, bodyJson?: string, unstored?: () => void): void {
    this.#done = true;
    const stored = this.#finish(state, body, bodyJson);
    if (unstored === undefined || this.#header.background) {
      this.#setTail(stored.then(then));
      return;
    }
    this.#setTail(
      stored.then(then, (err: unknown) => {
        this.#storeError = err;
        unstored();
      }),
    );
  }

  /** Why the answered outcome was not stored, when it was not (the route logs it); undefined otherwise. */
  get storeError(): unknown {
    return this.#storeError;
  }

  #storeError: unknown = undefined;

  /** The Response object as answered when it could not be stored: `store: false`, so nobody retrieves or continues from it. */
  #unstoredJson(state: ResponseState): string {
    return JSON.stringify(responseObject({ ...this.#header, store: false }, state));
  }

  /** `step` after the commit and the writes before it, whether or not storing succeeded. */
  #afterStored(step: () => void): void {
    this.#setTail(this.#tail.finally(step));
  }

  #setTail(tail: Promise<void>): void {
    // Handled here, reported by settled(): a rejection nobody awaits yet must not end the process.
    tail.catch(() => undefined);
    this.#tail = tail;
  }

  setHeader(name: string, value: string): void {
    this.#reply.setHeader(name, value);
  }

  /** The non-streamed chat completion: answered as the Response object. */
  json(status: number, body: unknown): void {
    const completion = (body ?? {}) as Record<string, unknown>;
    const turn = outputOfCompletion(completion, this.#newId, this.#header.namespaces);
    const adjusted = typeof completion.x_adjusted_reasoning_effort === 'string' ? completion.x_adjusted_reasoning_effort : null;
    const state: ResponseState = { status: statusOf(turn.finishReason), output: turn.output, usage: turn.usage, error: null, adjustedEffort: adjusted };
    const response = responseObject(this.#header, state);
    const text = JSON.stringify(response);
    const reply = this.#reply;
    const answer = (json: string): void => (reply.jsonText ? reply.jsonText(status, json) : reply.json(status, JSON.parse(json) as unknown));
    this.#store(state, response, () => (reply.jsonText ? reply.jsonText(status, text) : reply.json(status, response)), text, () => answer(this.#unstoredJson(state)));
  }

  beginStream(status: number, contentType: string): void {
    this.#reply.beginStream(status, contentType);
    if (!this.#opened) this.#hold(this.#openingFrames());
  }

  /**
   * Writes response.created and response.in_progress at once, if not yet sent. A streamed background
   * response opens its events when it is created (created: `queued`), before the chat turn has begun its stream.
   */
  openEvents(): void {
    if (!this.#opened) this.#reply.write(this.#openingFrames());
  }

  #openingFrames(): string {
    this.#opened = true;
    const opening: ResponseState = { status: 'in_progress', output: [], usage: null, error: null };
    // The pair carries one snapshot when the response is not a background one: serialized once.
    const snapshot = JSON.stringify(responseObject(this.#header, opening));
    const createdJson = this.#header.background ? JSON.stringify(responseObject(this.#header, { ...opening, status: 'queued' })) : snapshot;
    const [created, inProgress] = this.#translator.start();
    return responseEventFrame(created, createdJson) + responseEventFrame(inProgress, snapshot);
  }

  #hold(frames: string): void {
    if (frames === '') return;
    this.#held += frames;
    this.#heldFlush ??= setImmediate(this.#flushHeld);
  }

  /** The held frames followed by `frames`; nothing is held after. */
  #takeHeld(frames: string): string {
    if (this.#held === '') return frames;
    if (this.#heldFlush !== null) clearImmediate(this.#heldFlush);
    this.#heldFlush = null;
    const out = this.#held + frames;
    this.#held = '';
    return out;
  }

  /**
   * A turn refused or failed before it answered (background responses: nobody else hears of it): the
   * Response ends `failed` with this error, through the terminal event when its events were opened.
   */
  fail(error: { code: string; message: string }): void {
    if (this.#done) return;
    if (this.#opened) {
      this.#end(error);
      return;
    }
    const state: ResponseState = { status: 'failed', output: [], usage: null, error };
    this.#store(state, responseObject(this.#header, state), () => undefined);
  }

  /** Chat SSE text (possibly several frames): translated frame by frame. */
  write(chunk: string | Buffer): boolean {
    return this.#writeFrames(this.#translated(chunk));
  }

  #writeFrames(frames: string): boolean {
    // The turn's end is read: what came before it goes out with the terminal event (#flushHeld).
    if (this.#done) {
      this.#hold(frames);
      return true;
    }
    const out = this.#takeHeld(frames);
    return out === '' ? true : this.#reply.write(out);
  }

  /** A content-only chunk's text (the body of its JSON string): its events, or null when it is not valid JSON text. */
  #contentFrames(escaped: string): string | null {
    if (escaped.includes('\\')) {
      try {
        return this.#textFrames(JSON.parse(`"${escaped}"`) as string);
      } catch {
        return null;
      }
    }
    return this.#textFrames(escaped);
  }

  #textFrames(text: string): string {
    if (this.#done || text === '') return '';
    // A text item is open: its delta's frame written from the item's part, made once (no event object).
    const sequence = this.#translator.continueText(text);
    if (sequence !== -1) return textDeltaFrame(sequence, this.#deltaItemPart(), JSON.stringify(text), '[]');
    let frames = '';
    for (const event of this.#translator.text(text)) frames += frame(event);
    return frames;
  }

  #deltaItemPart(): string {
    const open = this.#translator.openText;
    if (open !== null && open.id !== this.#deltaItemId) {
      this.#deltaItemId = open.id;
      this.#deltaItem = deltaItemPart(open.id, open.index, 0);
    }
    return this.#deltaItem;
  }

  /** A chat chunk (normalized by the chat path) as its events; an error chunk ends the Response failed. */
  #chunkFrames(chunk: Record<string, unknown>): string {
    if (this.#done) return '';
    if (chunk.error && typeof chunk.error === 'object') {
      const e = chunk.error as Item;
      this.#end({ code: typeof e.code === 'string' ? e.code : 'internal_error', message: typeof e.message === 'string' ? e.message : 'The model turn failed.' });
      return '';
    }
    let frames = '';
    for (const event of this.#translator.chunk(chunk)) frames += frame(event);
    return frames;
  }

  #translated(chunk: string | Buffer): string {
    this.#decoder.pushData(typeof chunk === 'string' ? chunk : chunk.toString(), this.#onData);
    const out = this.#out;
    this.#out = '';
    return out;
  }

  #translate(data: string): string {
    if (data === '[DONE]') {
      this.#end(null);
      return '';
    }
    const text = contentOnlyText(data);
    if (text !== null) return this.#textFrames(text);
    try {
      return this.#chunkFrames(JSON.parse(data) as Record<string, unknown>);
    } catch {
      return '';
    }
  }

  /**
   * Closes the open items and writes the terminal event once the outcome is stored (frames written before
   * stay before it); `error` set: response.failed.
   */
  #end(error: { code: string; message: string } | null): void {
    const { events, result } = this.#translator.finish(error !== null);
    const adjustedEffort = this.#adjustedEffort;
    const state: ResponseState = error
      ? { status: 'failed', output: result.output, usage: result.usage, error, adjustedEffort }
      : { status: result.status, output: result.output, usage: result.usage, error: null, adjustedEffort };
    const response = responseObject(this.#header, state);
    const type = state.status === 'failed' ? 'response.failed' : state.status === 'incomplete' ? 'response.incomplete' : 'response.completed';
    const json = JSON.stringify(response);
    const opening = events.map(frame).join('');
    const terminal = this.#translator.terminal(type);
    const send = (frames: string): void => {
      // The stream's end is already asked for (the common case: [DONE] came with the upstream's end): the
      // frames go out with it, one write instead of two.
      if (this.#ending) this.#terminal = frames;
      else if (this.#reply.open) this.#reply.write(this.#takeHeld(frames));
    };
    this.#store(state, response, () => send(opening + responseEventFrame(terminal, json)), json, () => send(opening + responseEventFrame(terminal, this.#unstoredJson(state))));
  }

  onWritable(handler: () => void): void {
    this.#reply.onWritable(handler);
  }

  endStream(last?: string | Buffer): void {
    this.#endWith(last === undefined ? '' : this.#translated(last));
  }

  #endWith(frames: string): void {
    this.#hold(frames);
    // A stream cut before the chat path's [DONE] or error frame (the client left, or the connection failed).
    if (!this.#done && this.#reply.open) this.#end({ code: 'internal_error', message: 'The model stream ended before it was complete.' });
    this.#ending = true;
    this.#afterStored(() => {
      const out = this.#takeHeld(this.#terminal ?? '');
      this.#reply.endStream(out === '' ? undefined : out);
    });
  }

  onDrainDeadline(handler: () => void): void {
    this.#reply.onDrainDeadline(handler);
  }
}
