/**
 * Files' rows (the files port's half written once in files-store.ts): a file's row and its `file.uploaded`
 * are inserted in the transaction that claims its bytes, and deleted with `file.deleted` in one that drops
 * them (PostgreSQL) or before they go from disk (SQLite).
 */
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { fileObject, type FileMeta } from '../../core/files/file-objects.js';
import type { FilesStore, ListQuery } from '../../core/store/files-store.js';
import { first, rows, run, type SqlProgram } from '../sql/sql-program.js';
import type { SqlRunner } from '../sql/sql-runner.js';
import type { TransactionEvents } from '../sql/transaction-events.js';
import type { BytesRow, FileBytes, PlacedBytes } from './file-bytes.js';
import type { FilesTables } from './files-tables.js';

export interface FilesStoreDeps {
  readonly runner: SqlRunner;
  readonly events: TransactionEvents;
  readonly bytes: FileBytes;
  /** Rows' and events' time (the gateway's clock, injectable in tests). */
  readonly now: () => number;
}

export const newId = (prefix: string): string => `${prefix}${randomBytes(12).toString('hex')}`;

type FileRow = Pick<FilesTables['files'], 'id' | 'project_id' | 'filename' | 'purpose' | 'bytes' | 'created_at'>;

const fileOf = (r: FileRow): FileMeta => ({ id: r.id, projectId: r.project_id, filename: r.filename, purpose: r.purpose, bytes: r.bytes, createdAt: r.created_at });

/** A row with `blob_id` where the bytes side names one (PostgreSQL); SQLite's tables have no such column. */
const withBlob = <R extends object>(row: R, blobId: string | undefined): R & { blob_id: string } =>
  (blobId === undefined ? row : { ...row, blob_id: blobId }) as R & { blob_id: string };

/**
 * Runs the transaction that inserts the row of `placed` bytes: when it throws or returns false (refused),
 * no row has them, and they go.
 */
export async function insertedOrReleased<R>(placed: PlacedBytes, write: () => Promise<R>): Promise<R> {
  let result: R;
  try {
    result = await write();
  } catch (err) {
    await placed.release();
    throw err;
  }
  if (result === false) await placed.release();
  return result;
}

/** The file's row and its `file.uploaded`, its bytes claimed first (inside the caller's transaction). */
export function* insertFile(db: Kysely<FilesTables>, events: TransactionEvents, meta: FileMeta, placed: PlacedBytes, at: number): SqlProgram<void> {
  yield* placed.claim();
  const row = { id: meta.id, project_id: meta.projectId, filename: meta.filename, purpose: meta.purpose, bytes: meta.bytes, created_at: meta.createdAt };
  yield* run(db.insertInto('files').values(withBlob(row, placed.blobId)));
  yield* events.emit(meta.projectId, 'file.uploaded', fileObject(meta), at);
}

export function fileMethods({ runner, events, bytes, now }: FilesStoreDeps, db: Kysely<FilesTables>): Pick<FilesStore, 'commit' | 'get' | 'open' | 'list' | 'delete'> {
  const fileById = (projectId: string, fileId: string) => first(db.selectFrom('files').selectAll().where('project_id', '=', projectId).where('id', '=', fileId));

  function* listed(projectId: string, query: ListQuery): SqlProgram<{ data: FileMeta[]; hasMore: boolean } | null> {
    let afterSeq: number | null = null;
    if (query.after !== undefined) {
      const row = yield* fileById(projectId, query.after);
      if (!row) return null;
      afterSeq = row.seq;
    }
    const asc = query.order === 'asc';
    const { purpose } = query;
    const found = yield* rows(
      db
        .selectFrom('files')
        .selectAll()
        .where('project_id', '=', projectId)
        .$if(purpose !== undefined, (qb) => qb.where('purpose', '=', purpose ?? ''))
        .$if(afterSeq !== null, (qb) => qb.where('seq', asc ? '>' : '<', afterSeq ?? 0))
        .orderBy('seq', asc ? 'asc' : 'desc')
        .limit(query.limit + 1),
    );
    return { data: found.slice(0, query.limit).map(fileOf), hasMore: found.length > query.limit };
  }

  function* deleted(projectId: string, fileId: string): SqlProgram<BytesRow | null> {
    const row = yield* first(db.deleteFrom('files').where('project_id', '=', projectId).where('id', '=', fileId).returningAll());
    if (!row) return null;
    yield* events.emit(projectId, 'file.deleted', { id: fileId, object: 'file', deleted: true }, now());
    // PostgreSQL: the bytes in this transaction too, so a reader already streaming the file ends with an error.
    yield* bytes.dropWith([row]);
    return row;
  }

  return {
    async commit(projectId, staged, filename, purpose) {
      const meta: FileMeta = { id: newId('file-'), projectId, filename, purpose, bytes: staged.bytes, createdAt: now() };
      const placed = await bytes.place(staged, 'file', meta.id);
      await insertedOrReleased(placed, () => runner.write(insertFile(db, events, meta, placed, now())));
      return meta;
    },
    async get(projectId, fileId) {
      const row = await runner.read(fileById(projectId, fileId));
      return row ? fileOf(row) : null;
    },
    async open(projectId, fileId) {
      const row = await runner.read(fileById(projectId, fileId));
      return row ? { meta: fileOf(row), content: bytes.read(row) } : null;
    },
    list: (projectId, query) => runner.read(listed(projectId, query)),
    async delete(projectId, fileId) {
      const row = await runner.write(deleted(projectId, fileId));
      if (!row) return false;
      await bytes.dropAfter('file', [row]);
      return true;
    },
  };
}
