import { cosine } from '../core/vectors.js';
import { embedText } from './embeddings.js';
import { invalidRequest } from './errors.js';
import { isRecord, utf8Length } from './json.js';

// vLLM's /v1/rerank (Jina and Cohere clients' shape) and /v1/score, answered deterministically: the
// relevance of a document is the cosine of the hashing embeddings (embeddings.ts) mapped onto [0, 1],
// so texts sharing words rank first and the same request always gets the same scores.

export const DEFAULT_RERANK_MODEL = 'sim-rerank';

const tokensOf = (text: string): number => Math.ceil(utf8Length(text) / 4);
const relevance = (a: string, b: string): number => Math.round(((cosine(embedText(a), embedText(b)) + 1) / 2) * 1e6) / 1e6;
const modelOf = (body: Record<string, unknown>): string => (typeof body['model'] === 'string' && body['model'].length > 0 ? body['model'] : DEFAULT_RERANK_MODEL);

function documentText(doc: unknown, i: number): string {
  if (typeof doc === 'string') return doc;
  if (isRecord(doc) && typeof doc['text'] === 'string') return doc['text'];
  throw invalidRequest(`'documents[${i}]' must be a string or an object with a string 'text'`, 'documents');
}

export interface RerankBody {
  id: string;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
  results: { index: number; document?: { text: string }; relevance_score: number }[];
}

export function handleRerank(body: unknown, seq: number): RerankBody {
  if (!isRecord(body)) throw invalidRequest('Request body must be a JSON object');
  const query = body['query'];
  if (typeof query !== 'string') throw invalidRequest("'query' must be a string", 'query');
  const documents = body['documents'];
  if (!Array.isArray(documents)) throw invalidRequest("'documents' must be an array", 'documents');
  const texts = documents.map(documentText);
  const topN = body['top_n'];
  if (topN !== undefined && topN !== null && (typeof topN !== 'number' || !Number.isInteger(topN) || topN < 0)) {
    throw invalidRequest("'top_n' must be a non-negative integer", 'top_n');
  }
  const withDocs = body['return_documents'] !== false;
  let tokens = 0;
  const scored = texts.map((text, index) => {
    tokens += tokensOf(query) + tokensOf(text);
    return { index, text, score: relevance(query, text) };
  });
  scored.sort((a, b) => b.score - a.score || a.index - b.index);
  const kept = typeof topN === 'number' && topN > 0 ? scored.slice(0, topN) : scored;
  return {
    id: `rerank-sim-${seq}`,
    model: modelOf(body),
    usage: { prompt_tokens: tokens, total_tokens: tokens },
    results: kept.map((r) => ({ index: r.index, ...(withDocs ? { document: { text: r.text } } : {}), relevance_score: r.score })),
  };
}

export interface ScoreBody {
  id: string;
  object: 'list';
  created: number;
  model: string;
  data: { index: number; object: 'score'; score: number }[];
  usage: { prompt_tokens: number; total_tokens: number; completion_tokens: 0 };
}

function texts(v: unknown, param: string): string[] {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v) && v.length > 0 && v.every((t) => typeof t === 'string')) return v as string[];
  throw invalidRequest(`'${param}' must be a string or a non-empty array of strings`, param);
}

/** vLLM's pairing: one text_1 against every text_2, or the two lists pairwise (equal lengths). */
export function handleScore(body: unknown, seq: number, created: number): ScoreBody {
  if (!isRecord(body)) throw invalidRequest('Request body must be a JSON object');
  const left = texts(body['text_1'], 'text_1');
  const right = texts(body['text_2'], 'text_2');
  if (left.length !== 1 && left.length !== right.length) throw invalidRequest("'text_1' must hold one text or as many as 'text_2'", 'text_1');
  let tokens = 0;
  const data = right.map((r, index) => {
    const l = left.length === 1 ? (left[0] as string) : (left[index] as string);
    tokens += tokensOf(l) + tokensOf(r);
    return { index, object: 'score' as const, score: relevance(l, r) };
  });
  return { id: `score-sim-${seq}`, object: 'list', created, model: modelOf(body), data, usage: { prompt_tokens: tokens, total_tokens: tokens, completion_tokens: 0 } };
}
