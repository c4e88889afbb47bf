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
 * Every copied file's size is checked against its row.
 */
import { constants, copyFileSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';

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

/** Copies what `copy` (the backed-up database, open read-write) refers to from `fromDir` into `toDir`. */
export function copyStoreFiles(copy: Database.Database, fromDir: string, toDir: string): FilesCopy {
  // A store from before the files migration has no such tables, and nothing to copy.
  if (!hasTable(copy, 'files')) return { files: 0, parts: 0, bytes: 0, deletedMeanwhile: 0 };
  const files = copy.prepare<[], StoredBytes>('SELECT id, bytes FROM files').all();
  const parts = copy.prepare<[], StoredBytes>("SELECT p.id, p.bytes FROM upload_parts p JOIN uploads u ON u.id = p.upload_id WHERE u.status = 'pending'").all();
  mkdirSync(join(toDir, 'parts'), { recursive: true });
  let bytes = 0;
  const gone: string[] = [];
  const copyOne = (from: string, to: string, row: StoredBytes): boolean => {
    if (!existsSync(from)) return false;
    copyFileSync(from, to, constants.COPYFILE_EXCL);
    const size = statSync(to).size;
    if (size !== row.bytes) throw new Error(`the copy of ${from} holds ${size} bytes where the store records ${row.bytes}: the files folder does not match the database`);
    bytes += size;
    return true;
  };
  for (const row of files) if (!copyOne(join(fromDir, row.id), join(toDir, row.id), row)) gone.push(row.id);
  // A part vanishes only when its upload completes or is cancelled after the snapshot; its row goes too, and
  // the copied upload stays pending: its client re-sends the part or lets it expire, as after any interruption.
  const goneParts = parts.filter((row) => !copyOne(join(fromDir, 'parts', row.id), join(toDir, 'parts', row.id), row)).map((row) => row.id);
  const deleteFile = copy.prepare('DELETE FROM files WHERE id = ?');
  const deletePart = copy.prepare('DELETE FROM upload_parts WHERE id = ?');
  copy.transaction(() => {
    for (const id of gone) deleteFile.run(id);
    for (const id of goneParts) deletePart.run(id);
  })();
  return { files: files.length - gone.length, parts: parts.length - goneParts.length, bytes, deletedMeanwhile: gone.length };
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
