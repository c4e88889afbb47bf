import { prng } from './hash.js';

// A fixed vocabulary keeps output readable and every word a single "token",
// so token counts in usage, logprobs and stream chunks all agree trivially.
const VOCABULARY: readonly string[] = [
  'the', 'model', 'answer', 'is', 'simple', 'and', 'clear', 'data', 'flows', 'through',
  'a', 'gateway', 'to', 'many', 'servers', 'each', 'request', 'gets', 'routed', 'quickly',
  'tokens', 'stream', 'back', 'in', 'order', 'while', 'clients', 'wait', 'for', 'results',
  'latency', 'stays', 'low', 'when', 'queues', 'are', 'short', 'caches', 'help', 'with',
  'repeated', 'prompts', 'so', 'costs', 'drop', 'over', 'time', 'systems', 'scale', 'out',
  'under', 'load', 'we', 'measure', 'throughput', 'carefully', 'before', 'shipping', 'new', 'features',
  'reliable', 'networks', 'retry', 'failed', 'calls', 'gracefully', 'logs', 'record', 'every', 'event',
];

/** Words the logprobs alternatives are drawn from; exported for tests. */
export function vocabularyWord(index: number): string {
  return VOCABULARY[index % VOCABULARY.length] ?? 'the';
}

/**
 * `count` words from the vocabulary. Every word but the first carries a
 * leading space so joining the tokens gives natural text; `continuation`
 * gives the first one a space too (used when appending to a prefix).
 */
export function generateWords(seed: number, count: number, continuation = false): string[] {
  const next = prng(seed);
  const out: string[] = new Array<string>(count);
  for (let i = 0; i < count; i++) {
    const word = vocabularyWord(next());
    out[i] = i === 0 && !continuation ? word : ' ' + word;
  }
  return out;
}

/**
 * Splits on spaces but keeps each space attached to the following token, so
 * `tokens.join('')` reproduces the text byte for byte (runs of spaces become
 * single-space tokens).
 */
export function tokenizeText(text: string): string[] {
  if (text.length === 0) return [];
  return text.split(/(?= )/);
}

/**
 * `count` distinct vocabulary tokens that differ from `token`, keeping its
 * leading-space convention, for top_logprobs alternatives.
 */
export function alternativeTokens(token: string, seed: number, count: number): string[] {
  const leading = token.startsWith(' ') ? ' ' : '';
  const bare = token.trimStart();
  const out: string[] = [];
  for (let i = 0; out.length < count && i < VOCABULARY.length; i++) {
    const word = vocabularyWord(seed + i);
    if (word !== bare) out.push(leading + word);
  }
  return out;
}
