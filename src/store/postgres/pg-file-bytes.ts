/**
 * The PostgreSQL backend's file bytes (files/file-bytes.ts): blobs of chunk rows (file-blobs.ts) every
 * replica reads, so none needs a shared disk. A staged blob becomes a file's or a part's when the
 * transaction that inserts the row marks it committed; an upload's parts become one file's blob by
 * moving their chunks in the transaction that completes it; a deleted row's blob goes in its transaction.
 */
import type pg from 'pg';
import type { BytesRow, FileBytes, PlacedBytes } from '../files/file-bytes.js';
import { native, type SqlProgram } from '../sql/sql-program.js';
import { claimBlob, deleteBlobs, discardBlob, joinBlobs, md5OfBlobs, newBlobId, readBlobs, stageBlob, sweepStagedBlobs } from './file-blobs.js';
import type { PgQueryable } from './pg-store.js';

const onPostgres = <R>(step: (client: PgQueryable) => Promise<R>): SqlProgram<R> =>
  native({
    sqlite: () => {
      throw new Error('PostgreSQL file bytes ran on a SQLite connection: the files store was wired to the wrong runner');
    },
    postgres: step,
  });

const blobOf = (row: BytesRow): string => {
  if (row.blob_id === undefined) throw new Error(`row ${row.id} names no blob: the files store was wired to the wrong runner`);
  return row.blob_id;
};

export function createPgFileBytes(pool: pg.Pool): FileBytes {
  const staged = (id: string): PlacedBytes => ({
    blobId: id,
    claim: () =>
      onPostgres(async (client) => {
        if (!(await claimBlob(client, id))) throw new Error(`staged bytes ${id} are gone`);
      }),
    release: () => discardBlob(pool, id),
  });
  return {
    stage: (source, maxBytes) => stageBlob(pool, source, maxBytes),
    discard: (bytes) => discardBlob(pool, bytes.ref),
    place: async (bytes) => staged(bytes.ref),
    async join(parts, bytes) {
      const blobIds = parts.map(blobOf);
      const id = newBlobId();
      // The chunks move inside the transaction that completes the upload: rolled back with it, nothing to release.
      const joined: PlacedBytes = { blobId: id, claim: () => onPostgres((client) => joinBlobs(client, id, blobIds, bytes)), release: async () => undefined };
      return { bytes, md5: () => md5OfBlobs(pool, blobIds), discard: async () => undefined, place: async () => joined };
    },
    read: (file) => readBlobs(pool, [blobOf(file)]),
    dropWith: (rows) => onPostgres((client) => deleteBlobs(client, rows.map(blobOf))),
    dropAfter: async () => undefined,
    sweep: async () => void (await sweepStagedBlobs(pool)),
  };
}
