/**
 * Caps on what the gateway reads whole from a model server. A server that answers with an endless or
 * enormous body (a bug, a misconfigured base URL pointing at a file server) must not grow the gateway's
 * memory without bound: past the cap the read stops, the connection is dropped, and the turn fails with
 * a message that says why.
 */
import { GatewayError } from '../errors.js';

/** A whole answer held in memory: a buffered completion, an embeddings answer, a transcription. */
export const MAX_ANSWER_BYTES = 128 * 1024 * 1024;
/** An error answer, read only for its message. */
export const MAX_ERROR_BYTES = 64 * 1024;

export function answerTooLarge(limit: number): GatewayError {
  return new GatewayError('internal_error', { message: `The model server's answer exceeded ${limit} bytes; the gateway stopped reading it.` });
}

interface Body extends AsyncIterable<Uint8Array> {
  destroy?(err?: Error): unknown;
}

/** The body whole, or `answerTooLarge` once it passes `limit` bytes (the rest is not read). */
export async function readCapped(body: Body, limit = MAX_ANSWER_BYTES): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > limit) {
      body.destroy?.();
      throw answerTooLarge(limit);
    }
    chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  }
  return Buffer.concat(chunks, size);
}

/** An error answer's text, at most MAX_ERROR_BYTES of it ('' when unreadable). */
export async function errorText(body: Body): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      const room = MAX_ERROR_BYTES - size;
      chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, Math.min(chunk.byteLength, room)));
      size += Math.min(chunk.byteLength, room);
      if (size >= MAX_ERROR_BYTES) {
        body.destroy?.();
        break;
      }
    }
  } catch {
    // an error body that cannot be read is an empty message; the status still speaks
  }
  return Buffer.concat(chunks, size).toString('utf8');
}
