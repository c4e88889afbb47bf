/**
 * What the client receives from an embeddings call and what it is charged. The model server's JSON goes
 * back byte for byte except `model` (and vectors in another shape than asked: vector-encoding.ts), which echoes the request's, as chat responses do (SPEC "What the
 * service does" 2: the request's model is informational; the endpoint fixes the real one). The charge is
 * the server's `usage.prompt_tokens`; a server that reports none is charged an estimate of the input, so
 * token limits and budgets still see the call. Pure.
 */
import { GatewayError } from '../../errors.js';
import type { EmbeddingInput } from '../../schemas/embeddings.js';
import { spliceTopLevel } from '../json-splice.js';
import { conformedVectors, type EmbeddingsAsked } from './vector-encoding.js';

export interface EmbeddingUsage {
  readonly promptTokens: number;
  readonly source: 'upstream' | 'estimated';
}

export interface ClientEmbeddings {
  readonly body: Buffer;
  readonly usage: EmbeddingUsage;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const count = (v: unknown): number | null => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null);

/** 4 UTF-8 bytes per token for text (the gateway's usual estimate, core/chat); one per token id sent. */
export function estimateEmbeddingTokens(input: EmbeddingInput): number {
  if (typeof input === 'string') return Math.ceil(Buffer.byteLength(input) / 4);
  let tokens = 0;
  for (const item of input) {
    if (typeof item === 'string') tokens += Math.ceil(Buffer.byteLength(item) / 4);
    else if (typeof item === 'number') tokens += 1;
    else tokens += item.length;
  }
  return tokens;
}

/**
 * `what` names the response in the error (rerank and score answers are read the same way); `asked`, for
 * embeddings, is the vector shape the client asked for (vector-encoding.ts).
 */
export function clientEmbeddings(raw: Buffer, requestModel: string, input: EmbeddingInput, what = 'an embeddings', asked: EmbeddingsAsked | null = null): ClientEmbeddings {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (!isObject(parsed)) throw new GatewayError('internal_error', { message: `The model server returned ${what} response that is not a JSON object.` });
  const usage = isObject(parsed.usage) ? parsed.usage : {};
  const reported = count(usage.prompt_tokens) ?? count(usage.total_tokens);
  const data = asked === null ? null : conformedVectors(parsed.data, asked);
  const model = JSON.stringify(requestModel);
  if (data !== null) {
    // Vectors converted: the body is written anew (the server's bytes are kept only when nothing changed).
    return { body: Buffer.from(JSON.stringify({ ...parsed, data, model: requestModel })), usage: chargeOf(reported, input) };
  }
  // A server that sends no `model` at all gets one: clients read it, and the SDK types it as required.
  const body = spliceTopLevel(raw, new Map([['model', model]])) ?? Buffer.from(JSON.stringify({ ...parsed, model: requestModel }));
  return { body, usage: chargeOf(reported, input) };
}

function chargeOf(reported: number | null, input: EmbeddingInput): EmbeddingUsage {
  return reported !== null ? { promptTokens: reported, source: 'upstream' } : { promptTokens: estimateEmbeddingTokens(input), source: 'estimated' };
}
