/**
 * Files' bytes in PostgreSQL (tables: migrations/007-files.ts): written as 1 MiB chunk rows while the
 * upload streams in, read back chunk by chunk under the reader's backpressure. Neither direction holds a
 * whole file in memory, nor a connection for longer than one chunk's statement (a slow client must not
 * pin a pooled connection).
 */
import { createHash, randomBytes } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { FilesRefusal, type StagedBytes } from '../../core/store/files-store.js';
import type { PgQueryable } from './pg-store.js';

export const CHUNK_BYTES = 1024 * 1024;
/** A staged blob untouched this long is a crash's leftover (the disk store's temp files: an hour). */
export const STAGED_MAX_IDLE_MS = 60 * 60 * 1000;

export const newBlobId = (): string => `blob_${randomBytes(12).toString('hex')}`;

/**
 * Streams `source` into a new staged blob. Each chunk's insert also touches the blob (its idle age is
 * what the sweep reads), and inserts nothing if a sweep removed it meanwhile: the write then fails
 * rather than leave chunks without a blob. On any failure the blob and its chunks are deleted.
 */
export async function stageBlob(pool: pg.Pool, source: Readable, maxBytes: number): Promise<StagedBytes> {
  const id = newBlobId();
  const md5 = createHash('md5');
  let bytes = 0;
  let n = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const flush = async (data: Buffer): Promise<void> => {
    const { rowCount } = await pool.query(
      `WITH b AS (UPDATE file_blobs SET touched_at = $4 WHERE id = $1 AND NOT committed RETURNING id)
       INSERT INTO file_chunks (blob_id, n, data) SELECT id, $2, $3 FROM b`,
      [id, n, data, Date.now()],
    );
    if (rowCount !== 1) throw new Error(`staged blob ${id} vanished while being written`);
    n += 1;
  };
  const sink = new Writable({
    highWaterMark: CHUNK_BYTES,
    // The blob's row before any chunk; in the sink, so the pipeline below listens to `source` at once
    // (a source that fails before the row is in must not be an unheard 'error').
    construct(done) {
      pool.query('INSERT INTO file_blobs (id, bytes, committed, touched_at) VALUES ($1, 0, false, $2)', [id, Date.now()]).then(() => done(), done);
    },
    write(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      if (bytes > maxBytes) return done(new FilesRefusal('too_large', `The file exceeds the ${maxBytes}-byte limit.`));
      md5.update(chunk);
      pending.push(chunk);
      pendingBytes += chunk.length;
      if (pendingBytes < CHUNK_BYTES) return done();
      void (async () => {
        const all = Buffer.concat(pending, pendingBytes);
        let at = 0;
        for (; all.length - at >= CHUNK_BYTES; at += CHUNK_BYTES) await flush(all.subarray(at, at + CHUNK_BYTES));
        pending = at < all.length ? [all.subarray(at)] : [];
        pendingBytes = all.length - at;
      })().then(() => done(), done);
    },
    final(done) {
      const last = pendingBytes > 0 ? flush(Buffer.concat(pending, pendingBytes)) : Promise.resolve();
      last.then(() => done(), done);
    },
  });
  try {
    await pipeline(source, sink);
    await pool.query('UPDATE file_blobs SET bytes = $2 WHERE id = $1', [id, bytes]);
  } catch (err) {
    await pool.query('DELETE FROM file_blobs WHERE id = $1', [id]).catch(() => undefined);
    throw err;
  }
  return { ref: id, bytes, md5: md5.digest('hex') };
}

/** The blobs' bytes one after another, a chunk per query, read only as fast as the consumer takes them. */
export function readBlobs(pool: pg.Pool, blobIds: readonly string[]): Readable {
  return Readable.from(chunksOf(pool, blobIds), { objectMode: false, highWaterMark: CHUNK_BYTES });
}

async function* chunksOf(pool: pg.Pool, blobIds: readonly string[]): AsyncGenerator<Buffer> {
  for (const blobId of blobIds) {
    const head = await pool.query<{ bytes: number }>('SELECT bytes FROM file_blobs WHERE id = $1', [blobId]);
    const expected = head.rows[0]?.bytes;
    if (expected === undefined) throw new Error(`blob ${blobId} is gone (its file was deleted while being read)`);
    let read = 0;
    for (let n = 0; read < expected; n += 1) {
      const { rows } = await pool.query<{ data: Buffer }>('SELECT data FROM file_chunks WHERE blob_id = $1 AND n = $2', [blobId, n]);
      const data = rows[0]?.data;
      if (!data) throw new Error(`blob ${blobId} is gone (its file was deleted while being read)`);
      read += data.length;
      yield data;
    }
  }
}

/** MD5 of the blobs' bytes in order, streamed (an upload's parts, checked before they become a file). */
export async function md5OfBlobs(pool: pg.Pool, blobIds: readonly string[]): Promise<string> {
  const md5 = createHash('md5');
  for await (const chunk of chunksOf(pool, blobIds)) md5.update(chunk);
  return md5.digest('hex');
}

/**
 * Moves the parts' chunks, in order, to a new committed blob `id` of `bytes` (inside the caller's
 * transaction): the rows are renumbered, not copied, so completing an upload rewrites no bytes (PostgreSQL
 * keeps an unchanged TOASTed value when the row is updated).
 */
export async function joinBlobs(client: PgQueryable, id: string, blobIds: readonly string[], bytes: number): Promise<void> {
  await client.query('INSERT INTO file_blobs (id, bytes, committed, touched_at) VALUES ($1, $2, true, $3)', [id, bytes, Date.now()]);
  await client.query(
    `WITH p AS (SELECT b.id, b.ord FROM unnest($2::text[]) WITH ORDINALITY AS b(id, ord)),
     m AS (SELECT c.blob_id, c.n, (row_number() OVER (ORDER BY p.ord, c.n) - 1)::int AS new_n FROM file_chunks c JOIN p ON c.blob_id = p.id)
     UPDATE file_chunks c SET blob_id = $1, n = m.new_n FROM m WHERE c.blob_id = m.blob_id AND c.n = m.n`,
    [id, blobIds],
  );
}

/** Claims a staged blob for a row in the caller's transaction; false if it is not (or no longer) staged. */
export async function claimBlob(client: PgQueryable, id: string): Promise<boolean> {
  return ((await client.query('UPDATE file_blobs SET committed = true WHERE id = $1 AND NOT committed', [id])).rowCount ?? 0) === 1;
}

/** Deletes a blob no row has claimed (a committed one stays). */
export async function discardBlob(pool: pg.Pool, id: string): Promise<void> {
  await pool.query('DELETE FROM file_blobs WHERE id = $1 AND NOT committed', [id]);
}

/** Deletes committed blobs whose rows were deleted in the caller's transaction. */
export async function deleteBlobs(client: PgQueryable, ids: readonly string[]): Promise<void> {
  await client.query('DELETE FROM file_blobs WHERE id = ANY($1::text[])', [ids]);
}

/** Staged blobs idle past STAGED_MAX_IDLE_MS: writes a crash (or a lost client) left unfinished. */
export async function sweepStagedBlobs(pool: pg.Pool): Promise<number> {
  const { rowCount } = await pool.query('DELETE FROM file_blobs WHERE NOT committed AND touched_at < $1', [Date.now() - STAGED_MAX_IDLE_MS]);
  return rowCount ?? 0;
}
