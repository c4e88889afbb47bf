/**
 * The semantic router's profile index (hnswlib-node, cosine). Protocol and thread placement are in
 * src/pool/tasks.ts: `build` on the shared pool (writes the graph to a file), `load` and `search` on the
 * dedicated similarity thread, which keeps every loaded index in `indexes` across tasks.
 *
 * Why a file between build and load: a graph of 10,000 x 256 vectors takes seconds to build (BASELINE.md)
 * and would stall every search queued behind it on the one thread that holds the indexes; reading the
 * finished graph takes milliseconds. Why versions: the main thread cannot address a piscina thread, so a
 * search names the version it expects and a thread that lacks it (restarted, or not yet loaded) says so.
 */
import hnswlib from 'hnswlib-node';
import type {
  BuildIndexInput,
  BuildIndexOutput,
  LoadIndexInput,
  LoadIndexOutput,
  SearchBatchOutput,
  SearchIndexInput,
  SearchIndexOutput,
  SimilarityTask,
} from '../src/pool/tasks.js';

type Index = InstanceType<typeof hnswlib.HierarchicalNSW>;

interface Loaded {
  readonly version: number;
  readonly index: Index;
  readonly starts: Int32Array;
  /** Endpoint position of each label. */
  readonly endpointOf: Int32Array;
  /** Unit-length copies of the vectors, label-major, for exact scores. */
  readonly vectors: Float32Array;
  readonly dimensions: number;
}

const indexes = new Map<string, Loaded>();

function build(input: BuildIndexInput): BuildIndexOutput {
  const count = input.vectors.length / input.dimensions;
  const index = new hnswlib.HierarchicalNSW('cosine', input.dimensions);
  // A fixed seed: the same profiles give the same graph on every build.
  index.initIndex(Math.max(1, count), input.m, input.efConstruction, 100);
  for (let label = 0; label < count; label += 1) {
    if (input.cancel && Atomics.load(input.cancel, 0) !== 0) throw new Error('index build cancelled: the pool is closing');
    index.addPoint(Array.from(input.vectors.subarray(label * input.dimensions, (label + 1) * input.dimensions)), label);
  }
  if (input.cancel && Atomics.load(input.cancel, 0) !== 0) throw new Error('index build cancelled: the pool is closing');
  index.writeIndexSync(input.file);
  return { count };
}

function load(input: LoadIndexInput): LoadIndexOutput {
  const index = new hnswlib.HierarchicalNSW('cosine', input.dimensions);
  index.readIndexSync(input.file);
  index.setEf(input.efSearch);
  const count = input.starts[input.starts.length - 1] ?? 0;
  const endpointOf = new Int32Array(count);
  for (let e = 0; e + 1 < input.starts.length; e += 1) endpointOf.fill(e, input.starts[e], input.starts[e + 1]);
  const vectors = input.vectors;
  for (let label = 0; label < count; label += 1) normalize(vectors.subarray(label * input.dimensions, (label + 1) * input.dimensions));
  indexes.set(input.key, { version: input.version, index, starts: input.starts, endpointOf, vectors, dimensions: input.dimensions });
  return { count };
}

function search(input: SearchIndexInput): SearchIndexOutput {
  const loaded = indexes.get(input.key);
  if (!loaded || loaded.version !== input.version) return { found: false };
  const { index, starts, endpointOf } = loaded;
  const endpoints = starts.length - 1;
  const best = new Float32Array(endpoints).fill(Number.NaN);
  const query = Array.from(input.query);

  let mask: Uint8Array | null = null;
  let candidates = endpointOf.length;
  if (input.allowed) {
    mask = new Uint8Array(endpoints);
    candidates = 0;
    for (const e of input.allowed) {
      mask[e] = 1;
      candidates += (starts[e + 1] ?? 0) - (starts[e] ?? 0);
    }
  }
  const k = Math.min(input.k, candidates);
  if (k > 0) {
    const allowed = mask;
    // The filter crosses into JS per visited label; skip it when every endpoint may match.
    const result = allowed ? index.searchKnn(query, k, (label) => allowed[endpointOf[label] ?? 0] === 1) : index.searchKnn(query, k);
    result.neighbors.forEach((label, i) => {
      const e = endpointOf[label] ?? 0;
      const score = 1 - (result.distances[i] ?? 1);
      if (!(score <= (best[e] as number))) best[e] = score;
    });
  }
  for (const e of input.exact) {
    if (!Number.isNaN(best[e] as number)) continue;
    best[e] = exactBest(loaded, input.query, starts[e] ?? 0, starts[e + 1] ?? 0);
  }
  const scored: number[] = [];
  best.forEach((s, e) => {
    if (!Number.isNaN(s)) scored.push(e);
  });
  return { found: true, endpoints: Int32Array.from(scored), scores: Float32Array.from(scored, (e) => best[e] as number) };
}

/** Cosine against every vector of one endpoint: a tight loop over the unit-length copies. */
function exactBest(loaded: Loaded, query: Float32Array, from: number, to: number): number {
  const { vectors, dimensions } = loaded;
  let norm = 0;
  for (let i = 0; i < dimensions; i += 1) norm += (query[i] ?? 0) * (query[i] ?? 0);
  norm = Math.sqrt(norm) || 1;
  let best = Number.NaN;
  for (let label = from; label < to; label += 1) {
    const base = label * dimensions;
    let dot = 0;
    for (let i = 0; i < dimensions; i += 1) dot += (vectors[base + i] ?? 0) * (query[i] ?? 0);
    const score = dot / norm;
    if (!(score <= best)) best = score;
  }
  return best;
}

function normalize(v: Float32Array): void {
  let norm = 0;
  for (const x of v) norm += x * x;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let i = 0; i < v.length; i += 1) v[i] = (v[i] ?? 0) / norm;
}

export default function similarity(task: SimilarityTask): BuildIndexOutput | LoadIndexOutput | SearchIndexOutput | SearchBatchOutput {
  switch (task.op) {
    case 'build':
      return build(task);
    case 'load':
      return load(task);
    case 'search':
      return search(task);
    case 'search-batch':
      return task.searches.map((s) => search({ op: 'search', ...s }));
  }
}
