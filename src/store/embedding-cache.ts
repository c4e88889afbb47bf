/**
 * Profile embeddings cached by SHA-256 of the text (router/profile-index.ts hashes), per embedding model, so a restart (or a profile edit
 * that keeps most examples) re-embeds only what changed. Read and written only when a profile index is
 * (re)built, never per request. A cache, not shared state: with `storage.kind: postgres` it stays in each
 * instance's own SQLite file (a replica that lacks a vector embeds the text again).
 */
import { writeTransaction, type Db } from './db.js';

export interface EmbeddingCache {
  /** Vectors found for the given texts' hashes; missing hashes are absent from the map. */
  getMany(modelKey: string, hashes: readonly string[]): Map<string, Float32Array>;
  putMany(modelKey: string, entries: readonly { hash: string; vector: Float32Array }[], now: number): void;
}

interface Row {
  text_hash: string;
  vector: Buffer;
}

/** SQLite caps host parameters per statement; look hashes up in slices. */
const SLICE = 500;

export function createEmbeddingCache(db: Db): EmbeddingCache {
  const insert = db.prepare(
    'INSERT OR REPLACE INTO router_embeddings (model_key, text_hash, dimensions, vector, created_at) VALUES (?, ?, ?, ?, ?)',
  );
  const insertAll = writeTransaction(db, (modelKey: string, entries: readonly { hash: string; vector: Float32Array }[], now: number) => {
    for (const e of entries) insert.run(modelKey, e.hash, e.vector.length, Buffer.from(e.vector.buffer, e.vector.byteOffset, e.vector.byteLength), now);
  });
  return {
    getMany(modelKey, hashes) {
      const found = new Map<string, Float32Array>();
      for (let i = 0; i < hashes.length; i += SLICE) {
        const slice = hashes.slice(i, i + SLICE);
        const rows = db
          .prepare<string[], Row>(`SELECT text_hash, vector FROM router_embeddings WHERE model_key = ? AND text_hash IN (${slice.map(() => '?').join(', ')})`)
          .all(modelKey, ...slice);
        for (const r of rows) {
          // Copy out of the row's buffer: it may not be 4-byte aligned.
          const copy = new Uint8Array(r.vector.byteLength);
          copy.set(r.vector);
          found.set(r.text_hash, new Float32Array(copy.buffer));
        }
      }
      return found;
    },
    putMany(modelKey, entries, now) {
      insertAll(modelKey, entries, now);
    },
  };
}
