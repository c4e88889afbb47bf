/**
 * Exact search of a small profile index: a scan of its unit-length vectors instead of an hnswlib graph.
 * hnswlib-node takes the query as a JS array and reads it element by element through N-API, about 45 us
 * per search at 256 dimensions before any graph work, while a scan of a few thousand floats takes a few
 * microseconds. Up to EXACT_MAX_FLOATS the scan is both cheaper and exact (the graph search approximates
 * it: the same k nearest labels, the best per endpoint, the incumbent scored over all its vectors).
 *
 * Used on the main thread (similarity-pool.ts: a scan this small costs less than the hop to the thread,
 * measured: bench/RESULTS.md, routing) and by the similarity thread for the loads it gets.
 */
import type { LoadIndexInput, SearchIndexInput, SearchIndexOutput } from './tasks.js';

/** Vectors x dimensions up to which a search scans (measured crossover: bench/RESULTS.md, routing). */
export const EXACT_MAX_FLOATS = 16_384;

export interface Small {
  readonly version: number;
  readonly dimensions: number;
  readonly starts: Int32Array;
  /** Unit-length copies, label-major. */
  readonly vectors: Float32Array;
}

/** The unit-length copy a small index is scanned with; null for an index searched through the graph. */
export function scannable(task: LoadIndexInput): Small | null {
  if (task.vectors.length > EXACT_MAX_FLOATS) return null;
  const vectors = task.vectors.slice();
  const d = task.dimensions;
  for (let base = 0; base < vectors.length; base += d) {
    let norm = 0;
    for (let i = 0; i < d; i += 1) norm += (vectors[base + i] as number) * (vectors[base + i] as number);
    norm = Math.sqrt(norm);
    if (norm > 0) for (let i = 0; i < d; i += 1) vectors[base + i] = (vectors[base + i] as number) / norm;
  }
  return { version: task.version, dimensions: d, starts: task.starts, vectors };
}

/** The graph search's answer computed exactly: best cosine per endpoint among the k nearest allowed labels, plus `exact`. */
export function scan(index: Small, input: Omit<SearchIndexInput, 'op'>): SearchIndexOutput {
  const { vectors, dimensions: d, starts } = index;
  const endpoints = starts.length - 1;
  const q = input.query;
  let norm = 0;
  for (let i = 0; i < d; i += 1) norm += (q[i] as number) * (q[i] as number);
  norm = Math.sqrt(norm) || 1;
  const count = vectors.length / d;
  const scores = new Float64Array(count);
  for (let label = 0, base = 0; label < count; label += 1, base += d) {
    let dot = 0;
    for (let i = 0; i < d; i += 1) dot += (vectors[base + i] as number) * (q[i] as number);
    scores[label] = dot / norm;
  }
  const allowed = new Uint8Array(endpoints);
  if (input.allowed) for (const e of input.allowed) allowed[e] = 1;
  else allowed.fill(1);
  let candidates = 0;
  for (let e = 0; e < endpoints; e += 1) if (allowed[e]) candidates += (starts[e + 1] as number) - (starts[e] as number);
  const k = Math.min(input.k, candidates);
  // The k-th best allowed score: labels at or above it are the k nearest (ties: all of them).
  let threshold = Infinity;
  if (k > 0) {
    const pool = new Float64Array(candidates);
    let n = 0;
    for (let e = 0; e < endpoints; e += 1) if (allowed[e]) for (let l = starts[e] as number; l < (starts[e + 1] as number); l += 1) pool[n++] = scores[l] as number;
    pool.sort();
    threshold = pool[candidates - k] as number;
  }
  const best = new Float64Array(endpoints).fill(Number.NaN);
  const wanted = new Uint8Array(endpoints);
  for (const e of input.exact) wanted[e] = 1;
  for (let e = 0; e < endpoints; e += 1) {
    if (!allowed[e] && !wanted[e]) continue;
    for (let l = starts[e] as number; l < (starts[e + 1] as number); l += 1) {
      const s = scores[l] as number;
      if ((wanted[e] || s >= threshold) && !(s <= (best[e] as number))) best[e] = s;
    }
  }
  const scored: number[] = [];
  best.forEach((s, e) => {
    if (!Number.isNaN(s)) scored.push(e);
  });
  return { found: true, endpoints: Int32Array.from(scored), scores: Float32Array.from(scored, (e) => best[e] as number) };
}

