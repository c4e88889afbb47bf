/**
 * When the SSE stream of a POST that carries JSON-RPC requests (one, or a 2025-03-26 batch) may end. The
 * SDK's transport ends it once it has answered every request of the POST; but MCP sends no answer to a
 * request the client cancelled (notifications/cancelled), so a POST with a cancelled request would hold
 * its stream, and its session busy, until the client left. Here the stream ends once every request of the
 * POST is answered (its answer seen going out on the stream) or cancelled.
 *
 * Pure: it reads the bytes written to the stream and calls the `end` it is given; the route feeds it
 * (routes/mcp.ts), web-bridge.ts gives it the stream's end and the chunks.
 */
import type { StreamWatch } from './web-bridge.js';

export class PendingAnswers implements StreamWatch {
  readonly #pending: Set<string>;
  readonly #decoder = new TextDecoder();
  /** Text of an SSE event not complete yet (the SDK writes whole events, but a chunk is not promised to be one). */
  #partial = '';
  #end: (() => void) | null = null;

  /** `ids`: the POST's requests the SDK will answer, by id as JSON text (`7`, `"a"`). */
  constructor(ids: readonly string[]) {
    this.#pending = new Set(ids);
  }

  /** The stream is open; `end` ends it (at once when every request was settled before). */
  attach(end: () => void): void {
    this.#end = end;
    this.#endIfSettled();
  }

  /** The client cancelled request `id` (JSON text): it gets no answer. */
  cancelled(id: string): void {
    this.#pending.delete(id);
    this.#endIfSettled();
  }

  /** A chunk written to the client: the answers in it settle their requests. */
  sent(chunk: Uint8Array): void {
    const events = (this.#partial + this.#decoder.decode(chunk, { stream: true })).split('\n\n');
    this.#partial = events.pop() ?? '';
    for (const event of events) {
      const id = answeredId(event);
      if (id !== null) this.#pending.delete(id);
    }
    this.#endIfSettled();
  }

  #endIfSettled(): void {
    if (this.#pending.size === 0) this.#end?.();
  }
}

/** The id (JSON text) of the JSON-RPC response an SSE event carries; null for anything else (a notification, a comment). */
function answeredId(event: string): string | null {
  const data = event
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5))
    .join('\n');
  if (data === '') return null;
  let message: unknown;
  try {
    message = JSON.parse(data);
  } catch {
    return null;
  }
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return null;
  const m = message as Record<string, unknown>;
  if (!('result' in m) && !('error' in m)) return null;
  return typeof m.id === 'string' || typeof m.id === 'number' ? JSON.stringify(m.id) : null;
}
