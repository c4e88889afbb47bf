/**
 * Who checkpoints the WAL (db.ts ConnectionSite): a connection on the event loop never does, however far
 * past SQLite's 1,000 pages its commits take the WAL, and the store's writer thread checkpoints what such
 * a connection wrote, without a commit of its own. Read from the WAL index (the `-shm` file, SQLite's
 * walformat: the header's mxFrame at byte 16, the checkpoint's nBackfill at byte 96, native order), so
 * the test sees what SQLite did, not what we asked.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type ConnectionSite, type Db } from '../../../src/store/db.js';
// The writer thread runs compiled JavaScript: the compiled module, from dist/ (built by the global setup).
import { createStoreWriter } from '../../../dist/src/store/store-writer.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function freshDb(site: ConnectionSite): { db: Db; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'sb-wal-'));
  dirs.push(dir);
  const path = join(dir, 'store.db');
  return { db: openDatabase(path, 'NORMAL', site), path };
}

/** 1,200 commits of a page and more each: past the 1,000 pages at which SQLite checkpoints by default. */
function writePages(db: Db): void {
  db.exec('CREATE TABLE IF NOT EXISTS pages (b BLOB)');
  const insert = db.prepare('INSERT INTO pages (b) VALUES (randomblob(3000))');
  for (let i = 0; i < 1200; i += 1) insert.run();
}

function walIndex(path: string): { mxFrame: number; nBackfill: number } {
  const shm = readFileSync(`${path}-shm`);
  return { mxFrame: shm.readUInt32LE(16), nBackfill: shm.readUInt32LE(96) };
}

describe('WAL checkpoints', () => {
  it('a connection on the event loop writes past 1,000 pages and checkpoints nothing; one apart does', () => {
    const loop = freshDb('event-loop');
    writePages(loop.db);
    const onLoop = walIndex(loop.path);
    expect(onLoop.mxFrame).toBeGreaterThan(1000);
    expect(onLoop.nBackfill).toBe(0);
    loop.db.close();

    // SQLite's default: a checkpoint at 1,000 pages, after which the next commit starts the WAL over.
    const apart = freshDb('apart');
    writePages(apart.db);
    expect(walIndex(apart.path).mxFrame).toBeLessThan(1000);
    apart.db.close();
  });

  it("the store's writer thread checkpoints what the event loop's connection wrote", async () => {
    const { db, path } = freshDb('event-loop');
    writePages(db);
    expect(walIndex(path).nBackfill).toBe(0);
    const writer = createStoreWriter({ path, journalDir: null, checkpointEveryMs: 20 }, 1);
    try {
      const backfilled = (): boolean => {
        const { mxFrame, nBackfill } = walIndex(path);
        return nBackfill === mxFrame;
      };
      await expect.poll(backfilled, { timeout: 15_000, interval: 20 }).toBe(true);
      expect(walIndex(path).nBackfill).toBeGreaterThan(1000);
    } finally {
      await writer.release();
      db.close();
    }
  });
});
