/**
 * Embedding vectors in the shape the client asked for. OpenAI answers `encoding_format: "base64"` with
 * each vector as base64 of little-endian float32, and float (the default) with number arrays; the openai
 * SDK asks for base64 unless told otherwise and decodes every vector as base64. Several model servers
 * ignore `encoding_format` (and `dimensions`), so an answer can come back in the other shape, which the
 * SDK turns into wrong vectors with no error. The shape is converted only when it disagrees with the
 * request: an answer already right goes back as the server's bytes. Pure.
 */
import { GatewayError } from '../../errors.js';

export interface EmbeddingsAsked {
  /** `encoding_format`, `float` when absent (OpenAI's default). */
  readonly encodingFormat: 'float' | 'base64';
  readonly dimensions: number | null;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Float32Array uses the platform's byte order; the wire's is little-endian. */
const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

/** Dimensions of one vector in either shape; null for an embedding that is neither. */
function sizeOf(embedding: unknown): number | null {
  if (Array.isArray(embedding)) return embedding.length;
  if (typeof embedding === 'string') return Buffer.byteLength(embedding, 'base64') >> 2;
  return null;
}

function toBase64(vector: readonly unknown[]): string {
  if (!vector.every((x) => typeof x === 'number')) throw new GatewayError('internal_error', { message: 'The model server returned an embedding array that holds something other than numbers.' });
  const floats = Float32Array.from(vector as readonly number[]);
  if (LITTLE_ENDIAN) return Buffer.from(floats.buffer, floats.byteOffset, floats.byteLength).toString('base64');
  const bytes = Buffer.alloc(floats.length * 4);
  floats.forEach((x, i) => bytes.writeFloatLE(x, i * 4));
  return bytes.toString('base64');
}

function toNumbers(encoded: string): number[] {
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.length % 4 !== 0) throw new GatewayError('internal_error', { message: `The model server returned a base64 embedding of ${bytes.length} bytes, not a whole number of float32 values.` });
  const out = new Array<number>(bytes.length >> 2);
  for (let i = 0; i < out.length; i += 1) out[i] = bytes.readFloatLE(i * 4);
  return out;
}

/**
 * The answer's `data` with every vector in the asked shape, or null when all already are (or there is
 * nothing to convert). A vector of another size than `dimensions` asked is refused (SPEC principle 4: an
 * error, not a substitute answer; docs/decisions.md "Embeddings").
 */
export function conformedVectors(data: unknown, asked: EmbeddingsAsked): unknown[] | null {
  if (!Array.isArray(data)) return null;
  let changed = false;
  for (const item of data) {
    if (!isObject(item)) continue;
    const size = sizeOf(item.embedding);
    if (asked.dimensions !== null && size !== null && size !== asked.dimensions) {
      throw new GatewayError('unsupported_parameter', {
        param: 'dimensions',
        message: `The model server answered vectors of ${size} dimensions, not the ${asked.dimensions} asked: this endpoint's model does not honour dimensions. Leave dimensions out to get its ${size}.`,
      });
    }
    if (asked.encodingFormat === 'base64' ? Array.isArray(item.embedding) : typeof item.embedding === 'string') changed = true;
  }
  if (!changed) return null;
  return data.map((item: unknown) => {
    if (!isObject(item)) return item;
    const { embedding } = item;
    if (asked.encodingFormat === 'base64' && Array.isArray(embedding)) return { ...item, embedding: toBase64(embedding) };
    if (asked.encodingFormat === 'float' && typeof embedding === 'string') return { ...item, embedding: toNumbers(embedding) };
    return item;
  });
}
