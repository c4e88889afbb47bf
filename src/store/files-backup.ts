/**
 * The uploaded files' bytes in a backup (issue 32): on SQLite they live beside the database, in the
 * store's `files/` folder (store-path.ts, sqlite/disk-file-bytes.ts), not in it, so a copy of the database alone lists
 * files whose download then fails.
 *
 * The copy follows the database copy's rows, not the folder: a file is copied when the copied database
 * names it (`files` rows, and `upload_parts` rows of uploads still pending), so the backup holds exactly
 * what its database refers to and nothing the source swept or was still writing. Bytes never change once
 * renamed into place (disk-file-bytes.ts writes to `tmp/` and renames), so copying them after the database
 * snapshot is consistent, with one exception: a file deleted between the snapshot and its copy. Its row is
 * removed from the copy (as if the backup had started a moment later), never left pointing at nothing.
 * A delete removes the row first and the bytes after its commit (files/stored-files.ts, uploads-store.ts),
 * so bytes missing while the source still has the row were not deleted meanwhile: the store is damaged
 * (bytes lost or removed by hand), and the backup fails naming the file rather than dropping it silently.
 * Every copied file's size is checked against its row; bytes never change in place, so a wrong size is
 * damage too.
 */
import { constants, copyFileSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { ConfigError } from '../config-error.js';

export interface FilesCopy {
  readonly files: number;
  readonly parts: number;
  readonly bytes: number;
  /** Files deleted from the source after the database snapshot, left out of the copy (and its rows). */
  readonly deletedMeanwhile: number;
}

interface StoredBytes {
  readonly id: string;
  readonly bytes: number;
}

const hasTable = (db: Database.Database, name: string): boolean =>
  db.prepare<[string], { one: number }>("SELECT 1 AS one FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;

/** The source store's rows, asked when bytes are missing: is the row still there (then the bytes are lost, not deleted)? */
export interface SourceRows {
  fileListed(id: string): boolean;
  partListed(id: string): boolean;
}

/**
 * The source database's answer to SourceRows, on its open connection (each read sees the latest commit).
 * Asked only of a store whose copy has the files tables, so a store from before them prepares nothing.
 */
export function sourceRowsOf(source: Database.Database): SourceRows {
  const listed = (table: 'files' | 'upload_parts', id: string): boolean =>
    source.prepare<[string], { one: number }>(`SELECT 1 AS one FROM ${table} WHERE id = ?`).get(id) !== undefined;
  return { fileListed: (id) => listed('files', id), partListed: (id) => listed('upload_parts', id) };
}

/**
 * Copies what `copy` (the backed-up database, open read-write) refers to from `fromDir` into `toDir`.
 * Throws ConfigError (the CLI exits 2: the operator must repair the store, a retry fails the same way) when
 * bytes the source still lists are missing or have another size than their row records.
 */
export function copyStoreFiles(copy: Database.Database, fromDir: string, toDir: string, source: SourceRows): FilesCopy {
  // A store from before the files migration has no such tables, and nothing to copy.
  if (!hasTable(copy, 'files')) return { files: 0, parts: 0, bytes: 0, deletedMeanwhile: 0 };
  const files = copy.prepare<[], StoredBytes>('SELECT id, bytes FROM files').all();
  const parts = copy.prepare<[], StoredBytes>("SELECT p.id, p.bytes FROM upload_parts p JOIN uploads u ON u.id = p.upload_id WHERE u.status = 'pending'").all();
  mkdirSync(join(toDir, 'parts'), { recursive: true });
  let bytes = 0;
  const copyOne = (what: string, from: string, to: string, row: StoredBytes, listed: (id: string) => boolean): boolean => {
    if (!copied(from, to)) {
      if (!listed(row.id)) return false;
      throw damaged(`${what} ${row.id} has no bytes at ${from}, and the store still lists it (${row.bytes} bytes)`);
    }
    const size = statSync(to).size;
    if (size !== row.bytes) throw damaged(`${what} ${row.id} at ${from} holds ${size} bytes where the store records ${row.bytes}`);
    bytes += size;
    return true;
  };
  const gone = files.filter((row) => !copyOne('file', join(fromDir, row.id), join(toDir, row.id), row, source.fileListed)).map((row) => row.id);
  // A part vanishes only when its upload completes or is cancelled after the snapshot; its row goes too, and
  // the copied upload stays pending: its client re-sends the part or lets it expire, as after any interruption.
  const goneParts = parts.filter((row) => !copyOne('upload part', join(fromDir, 'parts', row.id), join(toDir, 'parts', row.id), row, source.partListed)).map((row) => row.id);
  const deleteFile = copy.prepare('DELETE FROM files WHERE id = ?');
  const deletePart = copy.prepare('DELETE FROM upload_parts WHERE id = ?');
  copy.transaction(() => {
    for (const id of gone) deleteFile.run(id);
    for (const id of goneParts) deletePart.run(id);
  })();
  return { files: files.length - gone.length, parts: parts.length - goneParts.length, bytes, deletedMeanwhile: gone.length };
}

/** false when the source is not there (checked by the copy itself: a delete may land between a check and the copy). */
function copied(from: string, to: string): boolean {
  try {
    copyFileSync(from, to, constants.COPYFILE_EXCL);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && !existsSync(from)) return false;
    throw err;
  }
}

function damaged(what: string): ConfigError {
  return new ConfigError(
    `${what}: the files folder does not match the database, so no backup was written. ` +
      'Put the bytes back (from an earlier backup), or delete the file (a part: cancel its upload) through the API, then back up again',
  );
}

/** Checks a backup's files folder against its database: every row's bytes present, with its size. */
export function verifyStoreFiles(copy: Database.Database, dir: string): number {
  if (!hasTable(copy, 'files')) return 0;
  const files = copy.prepare<[], StoredBytes>('SELECT id, bytes FROM files').all();
  for (const row of files) {
    const path = join(dir, row.id);
    const size = existsSync(path) ? statSync(path).size : -1;
    if (size !== row.bytes) throw new Error(`${path} ${size < 0 ? 'is missing' : `holds ${size} bytes`}: the database records ${row.bytes} bytes for file ${row.id}`);
  }
  return files.length;
}
