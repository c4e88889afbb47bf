/**
 * One background response's turn (docs/decisions.md "Background responses"), and the sink its
 * ResponsesReply writes to: every event frame is kept (frame i has sequence_number i), JSON answers are
 * dropped (the Response is stored by the reply's finish callback). Followers (the creating request with
 * `stream: true`, `GET .../{id}?stream=true`) subscribe to its frames.
 */
import type { TurnSink } from '../turn-io.js';

export class BackgroundRun implements TurnSink {
  readonly id: string;
  readonly projectId: string;
  /** Created with `stream: true`: its frames are the events clients follow. */
  readonly streamed: boolean;
  readonly frames: string[] = [];
  #ended = false;
  #cancelled = false;
  #abort: () => void = () => undefined;
  readonly #listeners = new Set<() => void>();

  constructor(id: string, projectId: string, streamed: boolean) {
    this.id = id;
    this.projectId = projectId;
    this.streamed = streamed;
  }

  get ended(): boolean {
    return this.#ended;
  }

  get cancelled(): boolean {
    return this.#cancelled;
  }

  get open(): boolean {
    return !this.#ended && !this.#cancelled;
  }

  setHeader(): void {}

  json(): void {}

  beginStream(): void {}

  write(chunk: string | Buffer): boolean {
    // ResponsesReply writes whole frames (`event: ...\ndata: {...}\n\n`, JSON without raw newlines).
    for (const part of chunk.toString().split('\n\n')) if (part !== '') this.frames.push(`${part}\n\n`);
    this.#notify();
    return true;
  }

  onWritable(): void {}

  endStream(last?: string): void {
    if (last !== undefined) this.write(last);
  }

  onDrainDeadline(): void {}

  /** Called with the abort of the turn's caller, once it exists. */
  onCancel(abort: () => void): void {
    this.#abort = abort;
  }

  cancel(): void {
    if (this.#cancelled || this.#ended) return;
    this.#cancelled = true;
    this.#abort();
    this.end();
  }

  end(): void {
    this.#ended = true;
    this.#notify();
  }

  /** `listener` runs after each new frame and at the end. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #notify(): void {
    for (const listener of [...this.#listeners]) listener();
  }
}
