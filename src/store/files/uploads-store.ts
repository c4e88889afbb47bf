/**
 * Uploads and their parts (issue 14), the files port's half written once in files-store.ts: an upload is
 * a row from its creation; a part's row is inserted only while its upload is pending and not expired, in
 * the transaction that claims its bytes, so a part racing a complete or a cancel (on any replica) is
 * refused, never orphaned. Completing joins the parts' bytes into one file's, then marks the upload
 * completed, inserts the file and deletes the parts in one transaction.
 */
import { sql, type Kysely } from 'kysely';
import { UPLOAD_TTL_MS, uploadStatusAt, type FileMeta, type PartMeta, type UploadMeta } from '../../core/files/file-objects.js';
import { FilesRefusal, type FilesStore } from '../../core/store/files-store.js';
import { first, rows, run, type SqlProgram } from '../sql/sql-program.js';
import type { BytesRow, PlacedBytes } from './file-bytes.js';
import { insertedOrReleased, insertFile, newId, type FilesStoreDeps } from './stored-files.js';
import type { FilesTables } from './files-tables.js';

const SWEEP_BATCH = 100;
// A literal, not a parameter: SQLite uses the partial index uploads_pending_expiry only when the query names its value.
const PENDING = sql.lit<'pending'>('pending');

type UploadRow = FilesTables['uploads'];
type PartRow = FilesTables['upload_parts'];

const uploadOf = (r: UploadRow): UploadMeta => ({
  id: r.id,
  projectId: r.project_id,
  filename: r.filename,
  purpose: r.purpose,
  bytes: r.bytes,
  mimeType: r.mime_type,
  status: r.status,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  fileId: r.file_id,
});

const noLongerPending = (upload: UploadMeta): FilesRefusal => new FilesRefusal('not_pending', `Upload ${upload.id} is no longer pending.`);

function refuseUnlessPending(upload: UploadMeta, now: number): void {
  const status = uploadStatusAt(upload, now);
  if (status !== 'pending') throw new FilesRefusal('not_pending', `Upload ${upload.id} is ${status}, not pending.`);
}

/** The parts named by `partIds`, in that order, holding the upload's bytes exactly; refused otherwise. */
function chosenParts(upload: UploadMeta, stored: readonly PartRow[], partIds: readonly string[]): PartRow[] {
  const known = new Map(stored.map((p) => [p.id, p] as const));
  if (new Set(partIds).size !== partIds.length) throw new FilesRefusal('bad_parts', 'part_ids names a part more than once.');
  const unknown = partIds.find((id) => !known.has(id));
  if (unknown !== undefined) throw new FilesRefusal('bad_parts', `Part ${unknown} does not belong to upload ${upload.id}.`);
  const chosen = partIds.map((id) => known.get(id)).filter((p) => p !== undefined);
  const total = chosen.reduce((sum, p) => sum + p.bytes, 0);
  if (total !== upload.bytes) throw new FilesRefusal('byte_mismatch', `The parts hold ${total} bytes; the upload was created for ${upload.bytes}.`);
  return chosen;
}

export function uploadMethods(deps: FilesStoreDeps, db: Kysely<FilesTables>): Pick<FilesStore, 'createUpload' | 'getUpload' | 'addPart' | 'complete' | 'cancel' | 'sweepExpired'> {
  const { runner, bytes, now } = deps;
  const programs = uploadPrograms(deps, db);
  return {
    async createUpload(projectId, input) {
      const createdAt = now();
      const meta: UploadMeta = { id: newId('upload_'), projectId, ...input, status: 'pending', createdAt, expiresAt: createdAt + UPLOAD_TTL_MS, fileId: null };
      const { filename, purpose, bytes: size, mimeType, status, expiresAt } = meta;
      await runner.write(
        run(db.insertInto('uploads').values({ id: meta.id, project_id: projectId, filename, purpose, bytes: size, mime_type: mimeType, status, created_at: createdAt, expires_at: expiresAt })),
      );
      return meta;
    },
    async getUpload(projectId, uploadId) {
      const row = await runner.read(first(db.selectFrom('uploads').selectAll().where('project_id', '=', projectId).where('id', '=', uploadId)));
      return row ? uploadOf(row) : null;
    },
    async addPart(_projectId, upload, staged) {
      const part: PartMeta = { id: newId('part_'), uploadId: upload.id, bytes: staged.bytes, createdAt: now() };
      const placed = await bytes.place(staged, 'part', part.id);
      if (!(await insertedOrReleased(placed, () => runner.write(programs.insertPart(part, placed))))) throw noLongerPending(upload);
      return part;
    },
    async complete(projectId, upload, partIds, md5) {
      refuseUnlessPending(upload, now());
      const chosen = chosenParts(upload, await runner.read(rows(db.selectFrom('upload_parts').selectAll().where('upload_id', '=', upload.id))), partIds);
      const joined = await bytes.join(chosen, upload.bytes);
      if (md5 !== undefined) {
        const actual = await joined.md5();
        if (md5.toLowerCase() !== actual) {
          await joined.discard();
          throw new FilesRefusal('md5_mismatch', `The assembled file's MD5 is ${actual}, not ${md5}.`);
        }
      }
      const meta: FileMeta = { id: newId('file-'), projectId, filename: upload.filename, purpose: upload.purpose, bytes: joined.bytes, createdAt: now() };
      const placed = await joined.place(meta.id);
      const parts = await insertedOrReleased(placed, () => runner.write(programs.completed(upload, meta, placed)));
      if (parts === false) throw noLongerPending(upload);
      await bytes.dropAfter('part', parts);
      return { upload: { ...upload, status: 'completed', fileId: meta.id }, file: meta };
    },
    async cancel(_projectId, upload) {
      refuseUnlessPending(upload, now());
      const parts = await runner.write(programs.ended(upload.id, 'cancelled'));
      if (parts === false) throw noLongerPending(upload);
      await bytes.dropAfter('part', parts);
      return { ...upload, status: 'cancelled' };
    },
    async sweepExpired() {
      await bytes.sweep();
      let swept = 0;
      for (;;) {
        const due = await runner.read(rows(db.selectFrom('uploads').select('id').where('status', '=', PENDING).where('expires_at', '<=', now()).limit(SWEEP_BATCH)));
        for (const { id } of due) {
          const parts = await runner.write(programs.ended(id, 'expired'));
          if (parts === false) continue;
          swept += 1;
          await bytes.dropAfter('part', parts);
        }
        if (due.length < SWEEP_BATCH) return swept;
      }
    },
  };
}

function uploadPrograms({ events, bytes, now }: FilesStoreDeps, db: Kysely<FilesTables>) {
  /** Deletes the upload's parts and (PostgreSQL) their bytes; returns them, for the bytes dropped after commit. */
  function* deleteParts(uploadId: string): SqlProgram<BytesRow[]> {
    const parts = yield* rows(db.deleteFrom('upload_parts').where('upload_id', '=', uploadId).returningAll());
    yield* bytes.dropWith(parts);
    return parts;
  }

  return {
    /** Only while pending and not expired; false (nothing inserted) otherwise. The bytes are claimed after the row. */
    *insertPart(part: PartMeta, placed: PlacedBytes): SqlProgram<boolean> {
      const { blobId } = placed;
      const columns = ['id', 'upload_id', 'bytes', 'created_at', ...(blobId === undefined ? [] : ['blob_id' as const])] as const;
      // INSERT ... SELECT takes the selected values by position: the aliases only name them.
      const source = db
        .selectFrom('uploads')
        .select((eb) => [
          eb.val(part.id).as('part_id'),
          eb.ref('uploads.id').as('upload_id'),
          eb.val(part.bytes).as('bytes'),
          eb.val(part.createdAt).as('created_at'),
          ...(blobId === undefined ? [] : [eb.val(blobId).as('blob_id')]),
        ])
        .where('id', '=', part.uploadId)
        .where('status', '=', PENDING)
        .where('expires_at', '>', part.createdAt);
      if ((yield* run(db.insertInto('upload_parts').columns(columns).expression(source))) === 0) return false;
      yield* placed.claim();
      return true;
    },

    /**
     * The upload completed, its file inserted with `file.uploaded`, its parts deleted: one transaction.
     * Only while pending and not expired (the upload's row lock, on PostgreSQL, orders it against a part,
     * a cancel or a complete on another replica); false otherwise.
     */
    *completed(upload: UploadMeta, meta: FileMeta, placed: PlacedBytes): SqlProgram<BytesRow[] | false> {
      const finished = yield* run(
        db.updateTable('uploads').set({ status: 'completed', file_id: meta.id }).where('id', '=', upload.id).where('status', '=', PENDING).where('expires_at', '>', meta.createdAt),
      );
      if (finished === 0) return false;
      yield* insertFile(db, events, meta, placed, now());
      return yield* deleteParts(upload.id);
    },

    /** Ends a pending upload (cancelled or expired) and deletes its parts; false if it was not pending. */
    *ended(uploadId: string, status: 'cancelled' | 'expired'): SqlProgram<BytesRow[] | false> {
      const changed = yield* run(db.updateTable('uploads').set({ status, file_id: null }).where('id', '=', uploadId).where('status', '=', PENDING));
      if (changed === 0) return false;
      return yield* deleteParts(uploadId);
    },
  };
}
