/**
 * The routing decision without the embedding call, at SPEC's scale (50 generative endpoints x 200
 * examples), through the real pieces: the index is built on the shared worker pool and searched on the
 * dedicated similarity thread, around the pure planRoute/finishRoute. Also the recall@1 of that HNSW
 * graph against exact (brute-force) search over the same vectors.
 *
 * Profiles are synthetic but shaped like real ones: every endpoint has its own topic vocabulary, every
 * text mixes topic words with words common to all, and vectors come from the simulator's embedding
 * function (256 dimensions), so neighbourhoods overlap the way bag-of-words embeddings do.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import hnswlib from 'hnswlib-node';
import { finishRoute, planRoute } from '../src/core/routing/decide.js';
import type { RouteEndpoint, RouteInput } from '../src/core/routing/types.js';
import { createSimilarityPool } from '../src/pool/similarity-pool.js';
import { createWorkerPool } from '../src/pool/worker-pool.js';
import { embedText } from '../src/simulator/embeddings.js';
import similarityTask from '../workers/similarity.js';
import { percentile } from './load.js';
import type { Timed } from './similarity-timed-worker.js';

export interface DecisionBench {
  readonly endpoints: number;
  readonly examples: number;
  readonly vectors: number;
  readonly dimensions: number;
  readonly buildMs: number;
  readonly decisions: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly meanMs: number;
  /** planRoute + finishRoute alone, scores given: the pure part. */
  readonly pureP99Us: number;
  /** The search task run in this thread (no hop): what the similarity thread spends per decision. */
  readonly searchP50Ms: number;
  readonly searchP99Ms: number;
  /** An empty task's round trip to the similarity thread (a search of an index it does not hold). */
  readonly hopP50Ms: number;
  readonly hopP99Ms: number;
  readonly p999Ms: number;
  /** Share of decisions over 1 ms. */
  readonly over1Ms: number;
  /** Round trips over 1 ms of a timed copy of the search task, by where the time went. */
  readonly slow: { readonly total: number; readonly lateStart: number; readonly longCompute: number; readonly lateReturn: number };
  readonly recallAt1: number;
  /** Same winning endpoint as exact search, through the worker's per-endpoint scores (k = 32). */
  readonly endpointAgreement: number;
  readonly recallQueries: number;
}

const DIMS = 256;
const COMMON = Array.from({ length: 200 }, (_, i) => `common${i}`);
const HNSW = { m: 16, efConstruction: 200, efSearch: 64 };
const K = 32;

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 32;
  };
}

function text(random: () => number, topic: number, topicWords: number, commonWords: number): string {
  const words: string[] = [];
  for (let i = 0; i < topicWords; i += 1) words.push(`topic${topic}word${Math.floor(random() * 30)}`);
  for (let i = 0; i < commonWords; i += 1) words.push(COMMON[Math.floor(random() * COMMON.length)] ?? 'x');
  return words.join(' ');
}

function endpoint(i: number): RouteEndpoint {
  return {
    id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    slug: `ep-${String(i).padStart(2, '0')}`,
    name: `Endpoint ${i}`,
    kind: 'chat',
    status: 'active',
    region: i % 2 === 0 ? 'local' : 'far',
    model: { id: `m${i}`, context_window: 32768, capabilities: ['tools'], reasoning: 'none', reasoning_budget: false },
  };
}

export async function runDecisionBench(opts: { endpoints?: number; examples?: number; queries?: number } = {}): Promise<DecisionBench> {
  const nEndpoints = opts.endpoints ?? 50;
  const nExamples = opts.examples ?? 200;
  const nQueries = opts.queries ?? 2000;
  const random = rng(42);
  const endpoints = Array.from({ length: nEndpoints }, (_, i) => endpoint(i));
  const count = nEndpoints * nExamples;
  const vectors = new Float32Array(count * DIMS);
  const starts = new Int32Array(nEndpoints + 1);
  for (let e = 0; e < nEndpoints; e += 1) {
    starts[e + 1] = (e + 1) * nExamples;
    for (let j = 0; j < nExamples; j += 1) vectors.set(embedText(text(random, e, 5, 4), DIMS), (e * nExamples + j) * DIMS);
  }
  const queries = Array.from({ length: nQueries }, () => {
    const topic = Math.floor(random() * nEndpoints);
    // One query in five mixes two topics: the ambiguous case, where graph search is least sure.
    const q = random() < 0.2 ? `${text(random, topic, 2, 2)} ${text(random, Math.floor(random() * nEndpoints), 2, 2)}` : text(random, topic, 3, 4);
    return Float32Array.from(embedText(q, DIMS));
  });

  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-routing-'));
  const pool = createWorkerPool({ minThreads: 1, maxThreads: 2 });
  const similarity = createSimilarityPool();
  try {
    await pool.whenReady();
    const file = join(dir, 'index.hnsw');
    const started = performance.now();
    await pool.buildIndex({ op: 'build', file, dimensions: DIMS, vectors: vectors.slice(), m: HNSW.m, efConstruction: HNSW.efConstruction });
    await similarity.load({ key: 'bench', version: 1, file, dimensions: DIMS, starts, efSearch: HNSW.efSearch, vectors: vectors.slice() });
    const buildMs = performance.now() - started;

    const settings = { enabled: true, multiModelEnabled: true, similarityFloor: 0.3, switchMargin: 0.1, proximityBonus: 0.02, fallbackEndpointId: null, excludedEndpointIds: [], rules: [] };
    const needs = { vision: false, audioInput: false, videoInput: false, tools: false, toolsDeclared: false, structuredOutput: false };
    const inputFor = (i: number): RouteInput => ({
      query: { text: `query ${i}`, inputTokens: 50, maxOutputTokens: null, requestModel: 'm', needs },
      endpoints,
      settings,
      workspace: { routingMode: null, routingModeDefault: 'semantic', pinnedEndpointId: null },
      hasEmbeddingEndpoint: true,
      region: 'local',
      videoInputEnabled: false,
      // Every other turn belongs to a conversation: its incumbent is scored exactly.
      incumbentId: i % 2 === 0 ? (endpoints[i % nEndpoints]?.id ?? null) : null,
    });
    const positionOf = new Map(endpoints.map((e, i) => [e.id, i]));

    const timings: number[] = [];
    const pure: number[] = [];
    for (let i = -200; i < queries.length; i += 1) {
      const q = queries[((i % queries.length) + queries.length) % queries.length] as Float32Array;
      const t0 = performance.now();
      const plan = planRoute(inputFor(i));
      if (plan.kind !== 'classify') throw new Error('expected a classification');
      const exact = plan.incumbent ? Int32Array.of(positionOf.get(plan.incumbent.id) ?? 0) : new Int32Array(0);
      const result = await similarity.search({ key: 'bench', version: 1, query: q.slice(), k: K, allowed: null, exact });
      if (!result.found) throw new Error('index not loaded');
      const scores = new Map<string, number>();
      result.endpoints.forEach((p, j) => scores.set(endpoints[p]?.id ?? '', result.scores[j] ?? 0));
      finishRoute(plan, scores);
      const t1 = performance.now();
      if (i >= 0) timings.push(t1 - t0);
      const p0 = performance.now();
      const again = planRoute(inputFor(i));
      if (again.kind === 'classify') finishRoute(again, scores);
      if (i >= 0) pure.push((performance.now() - p0) * 1000);
    }
    timings.sort((a, b) => a - b);
    pure.sort((a, b) => a - b);
    const hops: number[] = [];
    for (let i = -200; i < queries.length; i += 1) {
      const t0 = performance.now();
      await similarity.search({ key: 'absent', version: 1, query: new Float32Array(DIMS), k: 1, allowed: null, exact: new Int32Array(0) });
      if (i >= 0) hops.push(performance.now() - t0);
    }
    hops.sort((a, b) => a - b);

    const inThread = measureInThread(file, vectors, starts, queries);
    const slow = await splitSlowRoundTrips(file, vectors, starts, queries);
    const recall = measureRecall(file, vectors, count, queries.slice(0, 1000), starts);
    const agreement = await measureAgreement(similarity, vectors, count, queries.slice(0, 1000), starts);
    return {
      endpoints: nEndpoints,
      examples: nExamples,
      vectors: count,
      dimensions: DIMS,
      buildMs,
      decisions: timings.length,
      p50Ms: percentile(timings, 50) ?? 0,
      p99Ms: percentile(timings, 99) ?? 0,
      meanMs: timings.reduce((a, b) => a + b, 0) / timings.length,
      pureP99Us: percentile(pure, 99) ?? 0,
      hopP50Ms: percentile(hops, 50) ?? 0,
      hopP99Ms: percentile(hops, 99) ?? 0,
      p999Ms: percentile(timings, 99.9) ?? 0,
      over1Ms: timings.filter((t) => t > 1).length / timings.length,
      slow,
      searchP50Ms: percentile(inThread, 50) ?? 0,
      searchP99Ms: percentile(inThread, 99) ?? 0,
      recallAt1: recall,
      endpointAgreement: agreement,
      recallQueries: Math.min(1000, queries.length),
    };
  } finally {
    await similarity.close();
    await pool.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The worker's search function called in this thread, same index file and vectors: compute without the hop. */
function measureInThread(file: string, vectors: Float32Array, starts: Int32Array, queries: Float32Array[]): number[] {
  similarityTask({ op: 'load', key: 'in-thread', version: 1, file, dimensions: DIMS, starts, efSearch: HNSW.efSearch, vectors: vectors.slice() });
  const times: number[] = [];
  queries.forEach((q, i) => {
    const exact = i % 2 === 0 ? Int32Array.of(i % (starts.length - 1)) : new Int32Array(0);
    const t0 = performance.now();
    similarityTask({ op: 'search', key: 'in-thread', version: 1, query: q.slice(), k: K, allowed: null, exact });
    times.push(performance.now() - t0);
  });
  return times.sort((a, b) => a - b);
}

/** Where the time of slow round trips goes: a late start, the search itself, or the way back. */
async function splitSlowRoundTrips(file: string, vectors: Float32Array, starts: Int32Array, queries: Float32Array[]): Promise<DecisionBench['slow']> {
  const pool = new Piscina({ filename: fileURLToPath(new URL('./similarity-timed-worker.js', import.meta.url)), minThreads: 1, maxThreads: 1, idleTimeout: Infinity });
  const out = { total: 0, lateStart: 0, longCompute: 0, lateReturn: 0 };
  try {
    await pool.run({ op: 'load', key: 'timed', version: 1, file, dimensions: DIMS, starts, efSearch: HNSW.efSearch, vectors: vectors.slice() });
    for (let i = 0; i < queries.length; i += 1) {
      const sent = performance.timeOrigin + performance.now();
      const t = (await pool.run({ op: 'search', key: 'timed', version: 1, query: (queries[i] as Float32Array).slice(), k: K, allowed: null, exact: new Int32Array(0) })) as Timed;
      const back = performance.timeOrigin + performance.now();
      if (back - sent <= 1) continue;
      out.total += 1;
      const start = t.startedAt - sent;
      const ret = back - (t.startedAt + t.computeMs);
      if (start >= t.computeMs && start >= ret) out.lateStart += 1;
      else if (t.computeMs >= ret) out.longCompute += 1;
      else out.lateReturn += 1;
    }
  } finally {
    await pool.destroy();
  }
  return out;
}

/** Exact nearest label by cosine (vectors are unit length from embedText; the query is normalized here). */
function exactNearest(vectors: Float32Array, count: number, q: Float32Array): { label: number; score: number } {
  let norm = 0;
  for (const x of q) norm += x * x;
  norm = Math.sqrt(norm) || 1;
  let best = -Infinity;
  let label = -1;
  for (let l = 0; l < count; l += 1) {
    let dot = 0;
    const base = l * DIMS;
    for (let i = 0; i < DIMS; i += 1) dot += (vectors[base + i] ?? 0) * (q[i] ?? 0);
    if (dot / norm > best) {
      best = dot / norm;
      label = l;
    }
  }
  return { label, score: best };
}

/** recall@1 of the graph itself (same file, same ef): the top label equals the exact top label (ties count as hits). */
function measureRecall(file: string, vectors: Float32Array, count: number, queries: Float32Array[], starts: Int32Array): number {
  void starts;
  const index = new hnswlib.HierarchicalNSW('cosine', DIMS);
  index.readIndexSync(file);
  index.setEf(HNSW.efSearch);
  let hits = 0;
  for (const q of queries) {
    const exact = exactNearest(vectors, count, q);
    const found = index.searchKnn(Array.from(q), 1);
    const label = found.neighbors[0] ?? -1;
    const score = 1 - (found.distances[0] ?? 1);
    if (label === exact.label || Math.abs(score - exact.score) < 1e-6) hits += 1;
  }
  return hits / queries.length;
}

/** What routing sees: the endpoint with the best score from the worker equals the exact best endpoint. */
async function measureAgreement(
  similarity: ReturnType<typeof createSimilarityPool>,
  vectors: Float32Array,
  count: number,
  queries: Float32Array[],
  starts: Int32Array,
): Promise<number> {
  const endpointOf = (label: number): number => {
    let e = 0;
    while ((starts[e + 1] ?? Infinity) <= label) e += 1;
    return e;
  };
  let same = 0;
  for (const q of queries) {
    const exact = exactNearest(vectors, count, q);
    const result = await similarity.search({ key: 'bench', version: 1, query: q.slice(), k: K, allowed: null, exact: new Int32Array(0) });
    if (!result.found) continue;
    let best = -Infinity;
    let winner = -1;
    result.endpoints.forEach((e, i) => {
      if ((result.scores[i] ?? -Infinity) > best) {
        best = result.scores[i] ?? -Infinity;
        winner = e;
      }
    });
    if (winner === endpointOf(exact.label) || Math.abs(best - exact.score) < 1e-6) same += 1;
  }
  return same / queries.length;
}
