/**
 * What a crash leaves in the files folder (sqlite/disk-file-bytes.ts), removed when the store opens: writes that
 * never finished, and bytes whose row was never inserted.
 */
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Db } from './db.js';

/** Another gateway on the same store may be writing right now: only leftovers older than these go. */
const TEMP_MAX_AGE_MS = 60 * 60 * 1000;
const ORPHAN_MAX_AGE_MS = 10 * 60 * 1000;

/**
 * At start: temp files are writes a crash interrupted; a `file-` name without a row was renamed into
 * place just before a crash, its row never inserted; a part file without a row likewise. Ages are the
 * disk's (wall clock), not the injected clock's.
 */
export function sweepLeftovers(db: Db, dir: string, tmpDir: string, partsDir: string): void {
  const wall = Date.now();
  const old = (path: string, age: number): boolean => {
    try {
      return wall - statSync(path).mtimeMs > age;
    } catch {
      return false;
    }
  };
  for (const name of readdirSync(tmpDir)) if (old(join(tmpDir, name), TEMP_MAX_AGE_MS)) rmSync(join(tmpDir, name), { force: true });
  const hasFile = db.prepare<[string], { one: number }>('SELECT 1 AS one FROM files WHERE id = ?');
  for (const name of readdirSync(dir)) {
    if (name.startsWith('file-') && !hasFile.get(name) && old(join(dir, name), ORPHAN_MAX_AGE_MS)) rmSync(join(dir, name), { force: true });
  }
  const hasPart = db.prepare<[string], { one: number }>('SELECT 1 AS one FROM upload_parts WHERE id = ?');
  for (const name of readdirSync(partsDir)) if (!hasPart.get(name) && old(join(partsDir, name), ORPHAN_MAX_AGE_MS)) rmSync(join(partsDir, name), { force: true });
}
