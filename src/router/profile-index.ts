/**
 * Endpoint routing profiles (description + examples, from the config) as one HNSW index per workspace.
 *
 * Texts are embedded through the project's embedding endpoint and cached in SQLite by text hash; the
 * graph is built on the shared pool, written to a temporary file and loaded by the dedicated similarity
 * thread (src/pool/tasks.ts explains why). An index is identified by a signature of its inputs
 * (embedding model, endpoints, texts): a changed profile set gets a new version, built in the background
 * while the previous version keeps answering. A failed build is retried no sooner than RETRY_MS later.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EndpointRecord } from '../core/records.js';
import type { SimilarityPool } from '../pool/similarity-pool.js';
import type { WorkerPool } from '../pool/worker-pool.js';
import type { EmbeddingCache } from '../store/embedding-cache.js';

export interface IndexHandle {
  readonly key: string;
  readonly version: number;
  readonly dimensions: number;
  /** Endpoint id -> its position in the index (its label range). */
  readonly positions: ReadonlyMap<string, number>;
  readonly endpointIds: readonly string[];
  /** Profile vectors in the index; 0 means nothing can match. */
  readonly count: number;
}

export type EmbedTexts = (embedding: EndpointRecord, texts: string[]) => Promise<Float32Array<ArrayBuffer>[]>;

export interface ProfileIndexDeps {
  readonly pool: WorkerPool;
  readonly similarity: SimilarityPool;
  readonly cache: EmbeddingCache;
  readonly embedTexts: EmbedTexts;
  readonly now: () => number;
  readonly hnsw: { readonly m: number; readonly ef_construction: number; readonly ef_search: number };
  readonly onError: (message: string, key: string) => void;
}

export interface ProfileIndexes {
  /** The index for these endpoints (active generative endpoints of one workspace), building it if needed. */
  ensure(key: string, endpoints: readonly EndpointRecord[], embedding: EndpointRecord): Promise<IndexHandle | null>;
  /** Forgets a version the similarity thread no longer holds, so the next ensure() rebuilds it. */
  invalidate(handle: IndexHandle): void;
  close(): void;
}

const RETRY_MS = 5000;
/** Inputs per embedding call while indexing. */
const EMBED_BATCH = 128;

interface Entry {
  ready: (IndexHandle & { readonly signature: string }) | null;
  building: { readonly signature: string; readonly done: Promise<IndexHandle | null> } | null;
  failed: { readonly signature: string; readonly at: number } | null;
}

/** The embedding cache's key of a text. */
function textHash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export function profileTexts(e: EndpointRecord): string[] {
  if (!e.router) return [];
  return [e.router.description, ...e.router.examples].map((t) => t.trim()).filter((t) => t !== '');
}

export function createProfileIndexes(deps: ProfileIndexDeps): ProfileIndexes {
  const entries = new Map<string, Entry>();
  // Hashing every profile text per request would cost more than the search: signatures are kept per
  // endpoint list (the caller passes the same array until the catalog changes) and embedding endpoint.
  const signatures = new WeakMap<readonly EndpointRecord[], Map<EndpointRecord, string>>();
  const signature = (endpoints: readonly EndpointRecord[], embedding: EndpointRecord): string => {
    let byEmbedding = signatures.get(endpoints);
    if (!byEmbedding) signatures.set(endpoints, (byEmbedding = new Map()));
    let s = byEmbedding.get(embedding);
    if (s === undefined) byEmbedding.set(embedding, (s = signatureOf(endpoints, embedding)));
    return s;
  };
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-router-'));
  let versions = 0;

  async function build(key: string, signature: string, endpoints: readonly EndpointRecord[], embedding: EndpointRecord): Promise<IndexHandle> {
    const texts = endpoints.map(profileTexts);
    const hashes = texts.map((list) => list.map(textHash));
    const flat = hashes.flat();
    const vectors = await profileVectors(deps, embedding, texts.flat(), flat);
    const dimensions = vectors.get(flat[0] ?? '')?.length ?? 0;
    const starts = new Int32Array(endpoints.length + 1);
    hashes.forEach((list, i) => (starts[i + 1] = (starts[i] ?? 0) + list.length));
    versions += 1;
    const handle = {
      key,
      version: versions,
      dimensions,
      positions: new Map(endpoints.map((e, i) => [e.id, i])),
      endpointIds: endpoints.map((e) => e.id),
      count: flat.length,
      signature,
    };
    if (flat.length === 0) return handle;
    const packed = new Float32Array(flat.length * dimensions);
    flat.forEach((h, i) => {
      const v = vectors.get(h);
      if (!v || v.length !== dimensions) throw new Error('profile vectors of different sizes: the embedding model changed mid-build');
      packed.set(v, i * dimensions);
    });
    const file = join(dir, `${createHash('sha256').update(key).digest('hex').slice(0, 16)}-${handle.version}.hnsw`);
    try {
      // Both transfers detach their buffer: the build gets a copy.
      await deps.pool.buildIndex({ op: 'build', file, dimensions, vectors: packed.slice(), m: deps.hnsw.m, efConstruction: deps.hnsw.ef_construction });
      await deps.similarity.load({ key, version: handle.version, file, dimensions, starts, efSearch: deps.hnsw.ef_search, vectors: packed });
    } finally {
      rmSync(file, { force: true });
    }
    return handle;
  }

  return {
    async ensure(key, endpoints, embedding) {
      const sig = signature(endpoints, embedding);
      const entry = entries.get(key) ?? { ready: null, building: null, failed: null };
      entries.set(key, entry);
      if (entry.ready?.signature === sig) return entry.ready;
      if (entry.failed?.signature === sig && deps.now() - entry.failed.at < RETRY_MS) return entry.ready;
      let building = entry.building;
      if (building?.signature !== sig) {
        const done: Promise<IndexHandle | null> = build(key, sig, endpoints, embedding).then(
          (handle) => {
            if (entry.building?.done === done) entry.building = null;
            entry.ready = { ...handle, signature: sig };
            entry.failed = null;
            return handle;
          },
          (err: unknown) => {
            if (entry.building?.done === done) entry.building = null;
            entry.failed = { signature: sig, at: deps.now() };
            deps.onError((err as Error).message, key);
            return null;
          },
        );
        building = { signature: sig, done };
        entry.building = building;
      }
      // While a new version builds, the previous one keeps answering (endpoints it lacks are unscored).
      return entry.ready ?? building.done;
    },
    invalidate(handle) {
      const entry = entries.get(handle.key);
      if (entry?.ready?.version === handle.version) entry.ready = null;
    },
    close() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The vectors of the profile texts (by hash): from the cache, the missing ones embedded in batches and cached. */
async function profileVectors(deps: ProfileIndexDeps, embedding: EndpointRecord, texts: readonly string[], hashes: readonly string[]): Promise<Map<string, Float32Array>> {
  const modelKey = `${embedding.id}:${embedding.upstream.model}`;
  const vectors = deps.cache.getMany(modelKey, [...new Set(hashes)]);
  const wanted = new Map<string, string>();
  texts.forEach((text, i) => {
    const hash = hashes[i] ?? '';
    if (!vectors.has(hash)) wanted.set(hash, text);
  });
  const missing = [...wanted];
  for (let i = 0; i < missing.length; i += EMBED_BATCH) {
    const batch = missing.slice(i, i + EMBED_BATCH);
    const embedded = await deps.embedTexts(embedding, batch.map(([, t]) => t));
    const entriesOut = batch.map(([hash], j) => ({ hash, vector: embedded[j] as Float32Array }));
    deps.cache.putMany(modelKey, entriesOut, deps.now());
    for (const e of entriesOut) vectors.set(e.hash, e.vector);
  }
  return vectors;
}

function signatureOf(endpoints: readonly EndpointRecord[], embedding: EndpointRecord): string {
  const h = createHash('sha256').update(`${embedding.id}\u0000${embedding.upstream.base_url}\u0000${embedding.upstream.model}`);
  for (const e of endpoints) h.update(`\u0001${e.id}\u0000${profileTexts(e).join('\u0000')}`);
  return h.digest('base64url');
}
