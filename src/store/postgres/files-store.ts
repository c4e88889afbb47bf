/**
 * The files port on PostgreSQL (tables: migrations/007-files.ts; bytes: file-blobs.ts). Every replica
 * reads and writes the same rows and bytes, so a file uploaded through one is listed, downloaded and
 * deleted through any other. The commit discipline is the disk store's (store/files-store.ts): bytes are
 * staged completely first, and the file (or part) row is inserted in the transaction that marks its blob
 * committed, with its `file.*` event fanned out to the webhook tables (webhooks-store.ts emitEventIn).
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { FilesRefusal, type FilesStore } from '../../core/store/files-store.js';
import { fileObject, UPLOAD_TTL_MS, uploadStatusAt, type FileMeta, type PartMeta, type UploadMeta } from '../../core/files/file-objects.js';
import type { EventType } from '../../core/webhooks/event-types.js';
import { joinBlobs, md5OfBlobs, readBlobs, stageBlob, sweepStagedBlobs } from './file-blobs.js';
import type { PgStore } from './pg-store.js';
import { StagingsInFlight } from '../stagings-in-flight.js';
import { emitEventIn } from './webhooks-store.js';
import { fileOf, uploadOf, type FileRow, type UploadRow } from '../files-rows.js';

interface BlobFileRow extends FileRow {
  blob_id: string;
}

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');
const notPending = (upload: UploadMeta, status: string): FilesRefusal => new FilesRefusal('not_pending', `Upload ${upload.id} is ${status}, not pending.`);
const SWEEP_BATCH = 100;

/** How long a graceful stop waits for cut-off uploads to delete their staged blobs. */
const CLOSE_WAIT_MS = 5_000;

export function createPgFilesStore(store: PgStore, now: () => number): FilesStore {
  const { pool } = store;

  const emit = (client: pg.PoolClient, projectId: string, type: EventType, data: Record<string, unknown>): Promise<number> =>
    emitEventIn(store, client, projectId, type, data, now());
  const fileRow = async (db: pg.Pool | pg.PoolClient, projectId: string, fileId: string): Promise<BlobFileRow | null> =>
    (await db.query<BlobFileRow>('SELECT * FROM files WHERE project_id = $1 AND id = $2', [projectId, fileId])).rows[0] ?? null;
  /** Claims a staged blob for a row in this transaction; false if it is not (or no longer) staged. */
  const claimBlob = async (client: pg.PoolClient, blobId: string): Promise<boolean> =>
    ((await client.query('UPDATE file_blobs SET committed = true WHERE id = $1 AND NOT committed', [blobId])).rowCount ?? 0) === 1;
  const insertFile = (client: pg.PoolClient, meta: FileMeta, blobId: string): Promise<unknown> =>
    client.query('INSERT INTO files (id, project_id, filename, purpose, bytes, created_at, blob_id) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
      meta.id,
      meta.projectId,
      meta.filename,
      meta.purpose,
      meta.bytes,
      meta.createdAt,
      blobId,
    ]);
  /** Ends a pending upload (cancelled or expired) and deletes its parts' bytes; false if it was not pending. */
  const endUpload = (uploadId: string, status: 'cancelled' | 'expired'): Promise<boolean> =>
    store.transaction(async (client) => {
      const ended = await client.query("UPDATE uploads SET status = $2 WHERE id = $1 AND status = 'pending'", [uploadId, status]);
      if ((ended.rowCount ?? 0) === 0) return false;
      const parts = await client.query<{ blob_id: string }>('DELETE FROM upload_parts WHERE upload_id = $1 RETURNING blob_id', [uploadId]);
      await client.query('DELETE FROM file_blobs WHERE id = ANY($1::text[])', [parts.rows.map((p) => p.blob_id)]);
      return true;
    });

  const inFlight = new StagingsInFlight();
  return {
    stage: (source, maxBytes) => inFlight.track(stageBlob(pool, source, maxBytes)),
    async discard(staged) {
      await pool.query('DELETE FROM file_blobs WHERE id = $1 AND NOT committed', [staged.ref]);
    },
    async commit(projectId, staged, filename, purpose) {
      const meta: FileMeta = { id: `file-${hex(12)}`, projectId, filename, purpose, bytes: staged.bytes, createdAt: now() };
      await store.transaction(async (client) => {
        if (!(await claimBlob(client, staged.ref))) throw new Error(`staged bytes ${staged.ref} are gone`);
        await insertFile(client, meta, staged.ref);
        await emit(client, projectId, 'file.uploaded', fileObject(meta));
      });
      return meta;
    },
    async get(projectId, fileId) {
      const row = await fileRow(pool, projectId, fileId);
      return row ? fileOf(row) : null;
    },
    async open(projectId, fileId) {
      const row = await fileRow(pool, projectId, fileId);
      return row ? { meta: fileOf(row), content: readBlobs(pool, [row.blob_id]) } : null;
    },
    async list(projectId, query) {
      const asc = query.order === 'asc';
      let afterSeq: number | null = null;
      if (query.after !== undefined) {
        const row = await fileRow(pool, projectId, query.after);
        if (!row) return null;
        afterSeq = row.seq;
      }
      const { rows } = await pool.query<FileRow>(
        `SELECT * FROM files WHERE project_id = $1 AND ($2::text IS NULL OR purpose = $2)
           AND ($3::bigint IS NULL OR ${asc ? 'seq > $3' : 'seq < $3'})
         ORDER BY seq ${asc ? 'ASC' : 'DESC'} LIMIT $4`,
        [projectId, query.purpose ?? null, afterSeq, query.limit + 1],
      );
      return { data: rows.slice(0, query.limit).map(fileOf), hasMore: rows.length > query.limit };
    },
    delete: (projectId, fileId) =>
      // Row, event and bytes in one transaction: a reader already streaming the file ends with an error.
      store.transaction(async (client) => {
        const { rows } = await client.query<{ blob_id: string }>('DELETE FROM files WHERE project_id = $1 AND id = $2 RETURNING blob_id', [projectId, fileId]);
        const row = rows[0];
        if (!row) return false;
        await emit(client, projectId, 'file.deleted', { id: fileId, object: 'file', deleted: true });
        await client.query('DELETE FROM file_blobs WHERE id = $1', [row.blob_id]);
        return true;
      }),
    async createUpload(projectId, input) {
      const createdAt = now();
      const meta: UploadMeta = { id: `upload_${hex(12)}`, projectId, ...input, status: 'pending', createdAt, expiresAt: createdAt + UPLOAD_TTL_MS, fileId: null };
      await pool.query(
        'INSERT INTO uploads (id, project_id, filename, purpose, bytes, mime_type, status, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)',
        [meta.id, projectId, meta.filename, meta.purpose, meta.bytes, meta.mimeType, meta.status, createdAt, meta.expiresAt],
      );
      return meta;
    },
    async getUpload(projectId, uploadId) {
      const { rows } = await pool.query<UploadRow>('SELECT * FROM uploads WHERE project_id = $1 AND id = $2', [projectId, uploadId]);
      return rows[0] ? uploadOf(rows[0]) : null;
    },
    async addPart(_projectId, upload, staged) {
      const part: PartMeta = { id: `part_${hex(12)}`, uploadId: upload.id, bytes: staged.bytes, createdAt: now() };
      // Only while pending and not expired, in the transaction that claims the bytes: a part racing a
      // complete or cancel on another replica is refused, never orphaned.
      const added = await store.transaction(async (client) => {
        const { rowCount } = await client.query(
          "INSERT INTO upload_parts (id, upload_id, bytes, created_at, blob_id) SELECT $1, id, $2, $3, $4 FROM uploads WHERE id = $5 AND status = 'pending' AND expires_at > $3",
          [part.id, part.bytes, part.createdAt, staged.ref, upload.id],
        );
        if ((rowCount ?? 0) === 0) return false;
        if (!(await claimBlob(client, staged.ref))) throw new Error(`staged bytes ${staged.ref} are gone`);
        return true;
      });
      if (!added) {
        await pool.query('DELETE FROM file_blobs WHERE id = $1 AND NOT committed', [staged.ref]);
        throw new FilesRefusal('not_pending', `Upload ${upload.id} is no longer pending.`);
      }
      return part;
    },
    async complete(projectId, upload, partIds, md5) {
      const status = uploadStatusAt(upload, now());
      if (status !== 'pending') throw notPending(upload, status);
      const { rows } = await pool.query<{ id: string; bytes: number; blob_id: string }>('SELECT id, bytes, blob_id FROM upload_parts WHERE upload_id = $1', [upload.id]);
      const known = new Map(rows.map((p) => [p.id, p] as const));
      if (new Set(partIds).size !== partIds.length) throw new FilesRefusal('bad_parts', 'part_ids names a part more than once.');
      const unknown = partIds.find((id) => !known.has(id));
      if (unknown !== undefined) throw new FilesRefusal('bad_parts', `Part ${unknown} does not belong to upload ${upload.id}.`);
      const chosen = partIds.map((id) => known.get(id)).filter((p) => p !== undefined);
      const total = chosen.reduce((sum, p) => sum + p.bytes, 0);
      if (total !== upload.bytes) throw new FilesRefusal('byte_mismatch', `The parts hold ${total} bytes; the upload was created for ${upload.bytes}.`);
      const blobIds = chosen.map((p) => p.blob_id);
      if (md5 !== undefined) {
        const actual = await md5OfBlobs(pool, blobIds);
        if (md5.toLowerCase() !== actual) throw new FilesRefusal('md5_mismatch', `The assembled file's MD5 is ${actual}, not ${md5}.`);
      }
      const meta: FileMeta = { id: `file-${hex(12)}`, projectId, filename: upload.filename, purpose: upload.purpose, bytes: total, createdAt: now() };
      const done = await store.transaction(async (client) => {
        // The upload's row lock orders this against a part, a cancel or a complete on another replica.
        const finished = await client.query("UPDATE uploads SET status = 'completed', file_id = $2 WHERE id = $1 AND status = 'pending' AND expires_at > $3", [
          upload.id,
          meta.id,
          meta.createdAt,
        ]);
        if ((finished.rowCount ?? 0) === 0) return false;
        const blobId = await joinBlobs(client, blobIds, total);
        const parts = await client.query<{ blob_id: string }>('DELETE FROM upload_parts WHERE upload_id = $1 RETURNING blob_id', [upload.id]);
        await client.query('DELETE FROM file_blobs WHERE id = ANY($1::text[])', [parts.rows.map((p) => p.blob_id)]);
        await insertFile(client, meta, blobId);
        await emit(client, projectId, 'file.uploaded', fileObject(meta));
        return true;
      });
      if (!done) throw new FilesRefusal('not_pending', `Upload ${upload.id} is no longer pending.`);
      return { upload: { ...upload, status: 'completed', fileId: meta.id }, file: meta };
    },
    async cancel(_projectId, upload) {
      const status = uploadStatusAt(upload, now());
      if (status !== 'pending') throw notPending(upload, status);
      if (!(await endUpload(upload.id, 'cancelled'))) throw new FilesRefusal('not_pending', `Upload ${upload.id} is no longer pending.`);
      return { ...upload, status: 'cancelled' };
    },
    async sweepExpired() {
      await sweepStagedBlobs(pool);
      let swept = 0;
      for (;;) {
        const { rows } = await pool.query<{ id: string }>("SELECT id FROM uploads WHERE status = 'pending' AND expires_at <= $1 LIMIT $2", [now(), SWEEP_BATCH]);
        for (const { id } of rows) if (await endUpload(id, 'expired')) swept += 1;
        if (rows.length < SWEEP_BATCH) return swept;
      }
    },
    // Each cut-off staging deletes its blob itself; this waits for those deletes while the pool is open.
    close: () => inFlight.settled(CLOSE_WAIT_MS),
  };
}
