/**
 * The sink of a turn whose answer is kept, not sent (a batch line; the headers of a playground turn): the
 * status, headers and body a client would have received, byte for byte, with the error envelope rendered
 * as src/http/reply.ts renders it.
 */
import { toGatewayError } from '../errors.js';
import type { ByteSink } from './turn-io.js';

export class RecordedAnswer implements ByteSink {
  status = 0;
  /** In the order set (names as given). */
  readonly headers: [string, string][] = [];
  readonly #chunks: Buffer[] = [];
  #answered = false;
  #streaming = false;

  /** Nothing more is written once the answer is whole. */
  get open(): boolean {
    return !this.#answered;
  }

  get body(): string {
    return Buffer.concat(this.#chunks).toString('utf8');
  }

  setHeader(name: string, value: string): void {
    this.headers.push([name, value]);
  }

  json(status: number, body: unknown): void {
    this.send(status, JSON.stringify(body));
  }

  jsonText(status: number, text: string): void {
    this.send(status, text);
  }

  send(status: number, body: string | Buffer): void {
    if (!this.open) return;
    this.status = status;
    this.#chunks.push(Buffer.from(body));
    this.#answered = true;
  }

  /** The catalogue's envelope of `err` (anything not ours is internal_error), unless an answer began. */
  error(err: unknown): void {
    if (!this.open || this.#streaming) return;
    const e = toGatewayError(err);
    this.send(e.status, JSON.stringify(e.toEnvelope()));
  }

  beginStream(status: number): void {
    if (!this.open || this.#streaming) return;
    this.status = status;
    this.#streaming = true;
  }

  write(chunk: string | Buffer): boolean {
    if (this.open) this.#chunks.push(Buffer.from(chunk));
    return this.open;
  }

  onWritable(): void {}

  endStream(last?: string): void {
    if (last !== undefined) this.write(last);
    this.#answered = true;
  }

  onDrainDeadline(): void {}

  /** True once an answer began (a whole body, or a stream's head). */
  get began(): boolean {
    return this.#answered || this.#streaming;
  }
}
