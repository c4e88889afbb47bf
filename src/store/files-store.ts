/**
 * Files and uploads (issue 14), the SQLite backend of the files port (core/store/files-store.ts): bytes on disk under `dir` (the store's `files/` folder, store-path.ts),
 * metadata rows in SQLite (migration 009), `file.uploaded` / `file.deleted` events in the same transaction
 * as the row they describe.
 *
 * Layout of `dir`: `<file-id>` (a file's bytes), `parts/<part-id>` (an upload's parts until it completes or
 * is cancelled), `tmp/` (bytes being written). A write goes to `tmp/`, is fsynced, renamed to its final
 * name, and only then is the row inserted: a crash mid-upload leaves at most a temp file (cleared at start)
 * or, between rename and insert, bytes without a row (swept at start too), never a row without bytes.
 *
 * Routes and batches reach it through the port (store/sqlite/files-store.ts). `open` hands out a plain
 * file's path, valid until the file is deleted (a reader that has the file open keeps its bytes even
 * across a delete, POSIX semantics).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, mkdirSync, rmSync } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { FilesRefusal, type ListQuery } from '../core/store/files-store.js';
import type { EventOutbox } from '../core/webhooks/outbox.js';
import { fileObject, UPLOAD_TTL_MS, uploadStatusAt, type FileMeta, type PartMeta, type UploadMeta } from '../core/files/file-objects.js';
import { writeTransaction, type Db } from './db.js';
import { fileOf, uploadOf, type FileRow, type UploadRow } from './files-rows.js';
import { sweepLeftovers } from './files-sweep.js';

/** Bytes written, fsynced, not yet renamed into place. */
export interface TempFile {
  readonly path: string;
  readonly bytes: number;
  readonly md5: string;
}

export { FilesRefusal, type ListQuery };

/** The SQLite backend's disk side, synchronous where SQLite is (store/sqlite/files-store.ts wraps it in the port). */
export interface DiskFilesStore {
  readonly dir: string;
  /** Streams `source` to a temp file (fsynced). Rejects with FilesRefusal('too_large') past `maxBytes`. */
  writeTemp(source: Readable, maxBytes: number): Promise<TempFile>;
  discardTemp(temp: TempFile): void;
  /** Renames the temp file into place, then inserts the row and emits `file.uploaded`. */
  commit(projectId: string, temp: TempFile, filename: string, purpose: string): Promise<FileMeta>;
  get(projectId: string, fileId: string): FileMeta | null;
  open(projectId: string, fileId: string): { meta: FileMeta; path: string } | null;
  list(projectId: string, query: ListQuery): { data: FileMeta[]; hasMore: boolean } | null;
  /** Row and `file.deleted` in one transaction, then the bytes. false: no such file. */
  delete(projectId: string, fileId: string): Promise<boolean>;
  createUpload(projectId: string, input: { filename: string; purpose: string; bytes: number; mimeType: string }): UploadMeta;
  getUpload(projectId: string, uploadId: string): UploadMeta | null;
  addPart(projectId: string, upload: UploadMeta, temp: TempFile): Promise<PartMeta>;
  complete(projectId: string, upload: UploadMeta, partIds: readonly string[], md5: string | undefined): Promise<{ upload: UploadMeta; file: FileMeta }>;
  cancel(projectId: string, upload: UploadMeta): Promise<UploadMeta>;
  /** Marks pending uploads past their expiry `expired` and deletes their parts; returns how many. */
  sweepExpired(): Promise<number>;
}


const hex = (bytes: number): string => randomBytes(bytes).toString('hex');
const WRITE_HIGH_WATER_MARK = 1024 * 1024;

export function createFilesStore(db: Db, dir: string, outbox: EventOutbox, now: () => number): DiskFilesStore {
  const tmpDir = join(dir, 'tmp');
  const partsDir = join(dir, 'parts');
  mkdirSync(tmpDir, { recursive: true });
  mkdirSync(partsDir, { recursive: true });
  sweepLeftovers(db, dir, tmpDir, partsDir);

  const q = {
    insertFile: db.prepare('INSERT INTO files (id, project_id, filename, purpose, bytes, created_at) VALUES (?, ?, ?, ?, ?, ?)'),
    file: db.prepare<[string, string], FileRow>('SELECT * FROM files WHERE project_id = ? AND id = ?'),
    deleteFile: db.prepare('DELETE FROM files WHERE project_id = ? AND id = ?'),
    insertUpload: db.prepare(
      'INSERT INTO uploads (id, project_id, filename, purpose, bytes, mime_type, status, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    upload: db.prepare<[string, string], UploadRow>('SELECT * FROM uploads WHERE project_id = ? AND id = ?'),
    // Only while pending and not expired: a part racing a complete or cancel is refused, never orphaned.
    insertPart: db.prepare(
      "INSERT INTO upload_parts (id, upload_id, bytes, created_at) SELECT ?, id, ?, ? FROM uploads WHERE id = ? AND status = 'pending' AND expires_at > ?",
    ),
    parts: db.prepare<[string], { id: string; bytes: number }>('SELECT id, bytes FROM upload_parts WHERE upload_id = ?'),
    finish: db.prepare("UPDATE uploads SET status = ?, file_id = ? WHERE id = ? AND status = 'pending'"),
    deleteParts: db.prepare('DELETE FROM upload_parts WHERE upload_id = ?'),
  };

  const insertAndEmit = writeTransaction(db, (meta: FileMeta): void => {
    q.insertFile.run(meta.id, meta.projectId, meta.filename, meta.purpose, meta.bytes, meta.createdAt);
    outbox.emit(meta.projectId, 'file.uploaded', fileObject(meta));
  });
  const deleteAndEmit = writeTransaction(db, (projectId: string, fileId: string): boolean => {
    const row = q.file.get(projectId, fileId);
    if (!row) return false;
    q.deleteFile.run(projectId, fileId);
    outbox.emit(projectId, 'file.deleted', { id: fileId, object: 'file', deleted: true });
    return true;
  });
  const completeTx = writeTransaction(db, (upload: UploadMeta, meta: FileMeta): boolean => {
    if (q.finish.run('completed', meta.id, upload.id).changes === 0) return false;
    q.deleteParts.run(upload.id);
    q.insertFile.run(meta.id, meta.projectId, meta.filename, meta.purpose, meta.bytes, meta.createdAt);
    outbox.emit(meta.projectId, 'file.uploaded', fileObject(meta));
    return true;
  });
  const endTx = writeTransaction(db, (uploadId: string, status: 'cancelled' | 'expired'): string[] | null => {
    const parts = q.parts.all(uploadId).map((p) => p.id);
    if (q.finish.run(status, null, uploadId).changes === 0) return null;
    q.deleteParts.run(uploadId);
    return parts;
  });
  const expiredUploads = db.prepare<[number], { id: string }>("SELECT id FROM uploads WHERE status = 'pending' AND expires_at <= ? LIMIT 100");
  const removeParts = (ids: readonly string[]): Promise<unknown> => Promise.all(ids.map((id) => rm(join(partsDir, id), { force: true })));

  async function writeTemp(source: Readable, maxBytes: number): Promise<TempFile> {
    const path = join(tmpDir, hex(12));
    let bytes = 0;
    const md5 = createHash('md5');
    const counter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        bytes += chunk.length;
        if (bytes > maxBytes) return done(new FilesRefusal('too_large', `The file exceeds the ${maxBytes}-byte limit.`));
        md5.update(chunk);
        done(null, chunk);
      },
    });
    try {
      await pipeline(source, counter, createWriteStream(path, { flags: 'wx', highWaterMark: WRITE_HIGH_WATER_MARK }));
      await fsyncPath(path);
    } catch (err) {
      await rm(path, { force: true });
      throw err;
    }
    return { path, bytes, md5: md5.digest('hex') };
  }

  async function place(temp: TempFile, finalPath: string): Promise<void> {
    await rename(temp.path, finalPath);
    await fsyncPath(dir);
  }

  return {
    dir,
    writeTemp,
    discardTemp: (temp) => rmSync(temp.path, { force: true }),
    async commit(projectId, temp, filename, purpose) {
      const meta: FileMeta = { id: `file-${hex(12)}`, projectId, filename, purpose, bytes: temp.bytes, createdAt: now() };
      const finalPath = join(dir, meta.id);
      await place(temp, finalPath);
      try {
        insertAndEmit(meta);
      } catch (err) {
        rmSync(finalPath, { force: true });
        throw err;
      }
      return meta;
    },
    get(projectId, fileId) {
      const row = q.file.get(projectId, fileId);
      return row ? fileOf(row) : null;
    },
    open(projectId, fileId) {
      const row = q.file.get(projectId, fileId);
      return row ? { meta: fileOf(row), path: join(dir, row.id) } : null;
    },
    list(projectId, query) {
      let afterSeq: number | null = null;
      if (query.after !== undefined) {
        const row = q.file.get(projectId, query.after);
        if (!row) return null;
        afterSeq = row.seq;
      }
      const asc = query.order === 'asc';
      const where = ['project_id = @projectId'];
      if (query.purpose !== undefined) where.push('purpose = @purpose');
      if (afterSeq !== null) where.push(asc ? 'seq > @afterSeq' : 'seq < @afterSeq');
      const rows = db
        .prepare<Record<string, unknown>, FileRow>(`SELECT * FROM files WHERE ${where.join(' AND ')} ORDER BY seq ${asc ? 'ASC' : 'DESC'} LIMIT @limit`)
        .all({ projectId, purpose: query.purpose, afterSeq, limit: query.limit + 1 });
      return { data: rows.slice(0, query.limit).map(fileOf), hasMore: rows.length > query.limit };
    },
    async delete(projectId, fileId) {
      if (!deleteAndEmit(projectId, fileId)) return false;
      await rm(join(dir, fileId), { force: true });
      return true;
    },
    createUpload(projectId, input) {
      const createdAt = now();
      const meta: UploadMeta = { id: `upload_${hex(12)}`, projectId, ...input, status: 'pending', createdAt, expiresAt: createdAt + UPLOAD_TTL_MS, fileId: null };
      q.insertUpload.run(meta.id, projectId, meta.filename, meta.purpose, meta.bytes, meta.mimeType, meta.status, createdAt, meta.expiresAt);
      return meta;
    },
    getUpload(projectId, uploadId) {
      const row = q.upload.get(projectId, uploadId);
      return row ? uploadOf(row) : null;
    },
    async addPart(_projectId, upload, temp) {
      const part: PartMeta = { id: `part_${hex(12)}`, uploadId: upload.id, bytes: temp.bytes, createdAt: now() };
      const finalPath = join(partsDir, part.id);
      await place(temp, finalPath);
      const inserted = q.insertPart.run(part.id, part.bytes, part.createdAt, upload.id, part.createdAt).changes;
      if (inserted === 0) {
        rmSync(finalPath, { force: true });
        throw new FilesRefusal('not_pending', `Upload ${upload.id} is no longer pending.`);
      }
      return part;
    },
    async complete(projectId, upload, partIds, md5) {
      if (uploadStatusAt(upload, now()) !== 'pending') throw new FilesRefusal('not_pending', `Upload ${upload.id} is ${uploadStatusAt(upload, now())}, not pending.`);
      const known = new Map(q.parts.all(upload.id).map((p) => [p.id, p.bytes] as const));
      if (new Set(partIds).size !== partIds.length) throw new FilesRefusal('bad_parts', 'part_ids names a part more than once.');
      const unknown = partIds.find((id) => !known.has(id));
      if (unknown !== undefined) throw new FilesRefusal('bad_parts', `Part ${unknown} does not belong to upload ${upload.id}.`);
      const total = partIds.reduce((sum, id) => sum + (known.get(id) ?? 0), 0);
      if (total !== upload.bytes) {
        throw new FilesRefusal('byte_mismatch', `The parts hold ${total} bytes; the upload was created for ${upload.bytes}.`);
      }
      const temp = await writeTemp(Readable.from(concatParts(partIds.map((id) => join(partsDir, id)))), Number.MAX_SAFE_INTEGER);
      if (md5 !== undefined && md5.toLowerCase() !== temp.md5) {
        rmSync(temp.path, { force: true });
        throw new FilesRefusal('md5_mismatch', `The assembled file's MD5 is ${temp.md5}, not ${md5}.`);
      }
      const meta: FileMeta = { id: `file-${hex(12)}`, projectId, filename: upload.filename, purpose: upload.purpose, bytes: temp.bytes, createdAt: now() };
      const finalPath = join(dir, meta.id);
      await place(temp, finalPath);
      let done = false;
      try {
        done = completeTx(upload, meta);
      } finally {
        if (!done) rmSync(finalPath, { force: true });
      }
      if (!done) throw new FilesRefusal('not_pending', `Upload ${upload.id} is no longer pending.`);
      await removeParts([...known.keys()]);
      return { upload: { ...upload, status: 'completed', fileId: meta.id }, file: meta };
    },
    async cancel(_projectId, upload) {
      if (uploadStatusAt(upload, now()) !== 'pending') throw new FilesRefusal('not_pending', `Upload ${upload.id} is ${uploadStatusAt(upload, now())}, not pending.`);
      const parts = endTx(upload.id, 'cancelled');
      if (parts === null) throw new FilesRefusal('not_pending', `Upload ${upload.id} is no longer pending.`);
      await removeParts(parts);
      return { ...upload, status: 'cancelled' };
    },
    async sweepExpired() {
      let swept = 0;
      for (;;) {
        const due = expiredUploads.all(now());
        for (const { id } of due) {
          const parts = endTx(id, 'expired');
          if (parts) await removeParts(parts);
        }
        swept += due.length;
        if (due.length < 100) return swept;
      }
    },
  };
}

/** The parts' bytes, one after another, read with backpressure. */
async function* concatParts(paths: readonly string[]): AsyncGenerator<Buffer> {
  for (const path of paths) {
    for await (const chunk of createReadStream(path, { highWaterMark: WRITE_HIGH_WATER_MARK })) yield chunk as Buffer;
  }
}

async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
