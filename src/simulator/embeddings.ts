import { invalidRequest } from './errors.js';
import { fnv1a } from './hash.js';
import { isInteger, isRecord, utf8Length } from './json.js';
import type { Knobs } from './knobs.js';

// Hashing bag-of-words embeddings: no model, but texts sharing words get high
// cosine similarity, which is all semantic-cache and vector-store tests need.

export const DEFAULT_DIMENSIONS = 256;
export const DEFAULT_EMBED_MODEL = 'sim-embed';
const MAX_DIMENSIONS = 8192;
const BUCKETS_PER_WORD = 3;
// Trigrams make "cat"/"cats" similar without letting unrelated texts drift together.
const TRIGRAM_WEIGHT = 0.25;

function addFeature(vec: Float64Array, feature: string, weight: number): void {
  for (let k = 0; k < BUCKETS_PER_WORD; k++) {
    const h = fnv1a(feature, 0x811c9dc5 ^ Math.imul(k + 1, 0x27d4eb2d));
    // The top bit picks the sign so collisions tend to cancel instead of pile up.
    vec[h % vec.length] = (vec[h % vec.length] ?? 0) + (h & 0x80000000 ? -weight : weight);
  }
}

export function embedText(text: string, dimensions: number = DEFAULT_DIMENSIONS): number[] {
  const vec = new Float64Array(dimensions);
  const words = text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w.length > 0);
  const counts = new Map<string, number>();
  for (const word of words) counts.set(word, (counts.get(word) ?? 0) + 1);
  for (const [word, count] of counts) {
    // Sublinear term frequency: a repeated "the" should not outweigh the content words.
    const weight = 1 + Math.log(count);
    addFeature(vec, `w:${word}`, weight);
    const padded = `#${word}#`;
    for (let i = 0; i + 3 <= padded.length; i++) addFeature(vec, `t:${padded.slice(i, i + 3)}`, TRIGRAM_WEIGHT * weight);
  }
  // An all-zero vector breaks cosine math downstream; give empty text a fixed direction.
  if (words.length === 0) addFeature(vec, 'empty', 1);
  let norm = 0;
  for (let i = 0; i < dimensions; i++) norm += (vec[i] ?? 0) ** 2;
  norm = Math.sqrt(norm) || 1;
  return Array.from(vec, (v) => v / norm);
}


/** Little-endian float32, what the OpenAI SDK decodes for encoding_format=base64. */
export function toBase64Float32(vec: readonly number[]): string {
  const buf = Buffer.alloc(vec.length * 4);
  vec.forEach((v, i) => buf.writeFloatLE(v, i * 4));
  return buf.toString('base64');
}

interface EmbeddingInput {
  text: string;
  tokens: number;
}

function isTokenArray(v: unknown): v is number[] {
  return Array.isArray(v) && v.every((x) => isInteger(x));
}

function parseInputs(input: unknown): EmbeddingInput[] {
  const fromText = (text: string): EmbeddingInput => ({ text, tokens: Math.ceil(utf8Length(text) / 4) });
  const fromTokens = (ids: number[]): EmbeddingInput => ({ text: ids.join(' '), tokens: ids.length });
  if (typeof input === 'string') return [fromText(input)];
  if (isTokenArray(input) && input.length > 0) return [fromTokens(input)];
  if (Array.isArray(input) && input.length > 0) {
    return input.map((item, i) => {
      if (typeof item === 'string') return fromText(item);
      if (isTokenArray(item)) return fromTokens(item);
      throw invalidRequest(`'input[${i}]' must be a string or an array of token ids`, 'input');
    });
  }
  throw invalidRequest("'input' must be a string, an array of strings, or token arrays", 'input');
}

export interface EmbeddingsBody {
  object: 'list';
  data: { object: 'embedding'; index: number; embedding: number[] | string }[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

/** `knobs` can make it answer like a server that ignores `encoding_format` or `dimensions`. */
export function handleEmbeddings(body: unknown, knobs?: Pick<Knobs, 'embeddingFormat' | 'ignoreDimensions'>): EmbeddingsBody {
  if (!isRecord(body)) throw invalidRequest('Request body must be a JSON object');
  const inputs = parseInputs(body['input']);
  const dims = body['dimensions'] ?? DEFAULT_DIMENSIONS;
  if (!isInteger(dims) || dims < 1 || dims > MAX_DIMENSIONS) {
    throw invalidRequest(`'dimensions' must be an integer between 1 and ${MAX_DIMENSIONS}`, 'dimensions');
  }
  const format = body['encoding_format'] ?? 'float';
  if (format !== 'float' && format !== 'base64') {
    throw invalidRequest("'encoding_format' must be 'float' or 'base64'", 'encoding_format');
  }
  const model = typeof body['model'] === 'string' && body['model'].length > 0 ? body['model'] : DEFAULT_EMBED_MODEL;
  const size = knobs?.ignoreDimensions ? DEFAULT_DIMENSIONS : dims;
  const answerFormat = knobs?.embeddingFormat ?? format;
  let tokens = 0;
  const data = inputs.map((inp, index) => {
    tokens += inp.tokens;
    const vec = embedText(inp.text, size);
    return { object: 'embedding' as const, index, embedding: answerFormat === 'base64' ? toBase64Float32(vec) : vec };
  });
  return { object: 'list', data, model, usage: { prompt_tokens: tokens, total_tokens: tokens } };
}
