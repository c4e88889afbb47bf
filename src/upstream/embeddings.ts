/**
 * Embeddings through an embedding endpoint's upstream (`POST {base_url}/embeddings`), for the semantic
 * router: one call per routed request for the query, batched calls when profiles are (re)indexed. Vectors
 * are asked for as base64 little-endian float32 (supported by OpenAI-compatible servers and the
 * simulator), which decodes straight into a Float32Array instead of parsing thousands of JSON numbers; a
 * server that answers with number arrays anyway is read too. The call is the buffered exchange every
 * upstream call makes (upstream-call.ts): read whole by our own dispatch handler, under the answer cap.
 */
import { endianness } from 'node:os';
import { callUpstream, UpstreamDeadline } from './upstream-call.js';
import type { UpstreamClient, UpstreamTarget } from './upstream-client.js';

export class EmbeddingError extends Error {
  override readonly name = 'EmbeddingError';
}

export interface EmbedOptions {
  readonly model: string;
  readonly timeoutMs: number;
  /** Registers a callback run when the client goes away. */
  readonly onAbort?: ((listener: () => void) => void) | undefined;
  /** The client request's id (none for index builds), on the log line of a failed call. */
  readonly requestId?: string | undefined;
}

interface EmbeddingItem {
  readonly index?: unknown;
  readonly embedding?: unknown;
}

export async function embed(client: UpstreamClient, target: UpstreamTarget, input: readonly string[], opts: EmbedOptions): Promise<Float32Array<ArrayBuffer>[]> {
  const abort = new UpstreamDeadline(opts.timeoutMs, null, 'model server', null, null);
  opts.onAbort?.(() => abort.abort());
  try {
    const body = Buffer.from(JSON.stringify({ model: opts.model, input, encoding_format: 'base64' }));
    // An error status is thrown as the client's error (upstream-errors.ts); its message goes to the log.
    const res = await callUpstream(client, target, { path: '/embeddings', body, signal: abort, headersTimeoutMs: opts.timeoutMs, bodyTimeoutMs: opts.timeoutMs, requestId: opts.requestId }, false);
    return vectorsOf(res.body.toString('utf8'), input.length);
  } catch (err) {
    if (err instanceof EmbeddingError) throw err;
    throw new EmbeddingError(abort.aborted ? 'the embedding call was aborted or timed out' : `the embedding call failed: ${(err as Error).message}`);
  } finally {
    abort.done();
  }
}

function vectorsOf(text: string, expected: number): Float32Array<ArrayBuffer>[] {
  let parsed: { data?: unknown };
  try {
    parsed = JSON.parse(text) as { data?: unknown };
  } catch {
    throw new EmbeddingError('the embedding endpoint answered with something that is not JSON');
  }
  if (!Array.isArray(parsed.data) || parsed.data.length !== expected) throw new EmbeddingError('the embedding response has no data array of the expected length');
  const out: Float32Array<ArrayBuffer>[] = new Array<Float32Array<ArrayBuffer>>(expected);
  (parsed.data as EmbeddingItem[]).forEach((item, i) => {
    const index = typeof item.index === 'number' ? item.index : i;
    if (index < 0 || index >= expected) throw new EmbeddingError('the embedding response has an index out of range');
    out[index] = decode(item.embedding);
  });
  const dims = out[0]?.length ?? 0;
  if (dims === 0 || out.some((v) => v === undefined || v.length !== dims)) throw new EmbeddingError('the embedding response has vectors of different sizes');
  return out;
}

/** Float32Array uses the platform's byte order; the wire is little-endian. */
const LITTLE_ENDIAN = endianness() === 'LE';

function decode(embedding: unknown): Float32Array<ArrayBuffer> {
  if (typeof embedding === 'string') {
    if (LITTLE_ENDIAN) {
      // Decoded straight into the vector's memory: no intermediate bytes, no per-float read. The length is
      // an upper bound (characters outside the alphabet are skipped); when fewer bytes came, read as below.
      const vector = new Float32Array(Buffer.byteLength(embedding, 'base64') >> 2);
      if (Buffer.from(vector.buffer).write(embedding, 'base64') === vector.byteLength) return vector;
    }
    const bytes = Buffer.from(embedding, 'base64');
    const vector = new Float32Array(bytes.length >> 2);
    for (let i = 0; i < vector.length; i += 1) vector[i] = bytes.readFloatLE(i * 4);
    return vector;
  }
  if (Array.isArray(embedding) && embedding.every((x) => typeof x === 'number')) return Float32Array.from(embedding as number[]);
  throw new EmbeddingError('the embedding response has an embedding that is neither base64 nor a number array');
}
