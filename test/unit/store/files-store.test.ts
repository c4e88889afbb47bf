/**
 * The files store's crash safety: bytes are written to a temp name and only a completed, renamed file gets
 * a row, so an interrupted write leaves neither a row nor (after the next start) stray bytes.
 */
import { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync, type ReadStream } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { EventOutbox } from '../../../src/core/webhooks/outbox.js';
import { openDatabase, type Db } from '../../../src/store/db.js';
import { FilesRefusal, type FilesStore } from '../../../src/core/store/files-store.js';
import { createFilesStore } from '../../../src/store/files/files-store.js';
import { createSqliteRunner } from '../../../src/store/sql/sqlite-runner.js';
import { sqliteTransactionEvents } from '../../../src/store/sql/transaction-events.js';
import { createDiskFileBytes } from '../../../src/store/sqlite/disk-file-bytes.js';
import { tempDir } from '../../helpers/processes.js';

function setup(): { db: Db; dir: string; events: string[]; outbox: EventOutbox } {
  const root = tempDir();
  const db = openDatabase(join(root, 'switchboard.db'));
  // No projects are synced here; the rows' project reference is not what is under test.
  db.pragma('foreign_keys = OFF');
  const events: string[] = [];
  const outbox: EventOutbox = { emit: (_p, type) => (events.push(type), 1), emitBudgetThreshold: () => 0 };
  return { db, dir: join(root, 'files'), events, outbox };
}

/** The store as the gateway wires it on SQLite (wiring/files.ts): rows on `db`, bytes under `dir`. */
const filesStore = (db: Db, dir: string, outbox: EventOutbox, now: () => number): FilesStore =>
  createFilesStore({ runner: createSqliteRunner(db), events: sqliteTransactionEvents(outbox), bytes: createDiskFileBytes(db, dir), now });

const count = (db: Db): number => (db.prepare('SELECT count(*) AS n FROM files').get() as { n: number }).n;

describe('files store', () => {
  it('leaves no temp file and no row when the source fails mid-write', async () => {
    const { db, dir, outbox, events } = setup();
    const files = filesStore(db, dir, outbox, () => 1000);
    const source = new Readable({ read() {} });
    const written = files.stage(source, 1024 * 1024);
    source.push(Buffer.alloc(4096));
    source.destroy(new Error('client went away'));
    await expect(written).rejects.toThrow('client went away');
    expect(readdirSync(join(dir, 'tmp'))).toEqual([]);
    expect(count(db)).toBe(0);
    expect(events).toEqual([]);
  });

  it('refuses past the cap with too_large and removes the partial bytes', async () => {
    const { db, dir, outbox } = setup();
    const files = filesStore(db, dir, outbox, () => 1000);
    const err = await files.stage(Readable.from([Buffer.alloc(600), Buffer.alloc(600)]), 1000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FilesRefusal);
    expect((err as FilesRefusal).reason).toBe('too_large');
    expect(readdirSync(join(dir, 'tmp'))).toEqual([]);
  });

  it('commits a row and file.uploaded only once the bytes are in place, and open() hands out the path', async () => {
    const { db, dir, outbox, events } = setup();
    const files = filesStore(db, dir, outbox, () => 5000);
    const staged = await files.stage(Readable.from([Buffer.from('hello')]), 1000);
    const meta = await files.commit('proj_a', staged, 'h.txt', 'batch');
    expect(events).toEqual(['file.uploaded']);
    const opened = await files.open('proj_a', meta.id);
    const path = (opened?.content as ReadStream | undefined)?.path;
    opened?.content.destroy();
    expect({ meta: opened?.meta, path }).toEqual({ meta, path: join(dir, meta.id) });
    expect(await files.open('proj_b', meta.id)).toBeNull();
    expect(await files.delete('proj_a', meta.id)).toBe(true);
    expect(events).toEqual(['file.uploaded', 'file.deleted']);
    expect(existsSync(join(dir, meta.id))).toBe(false);
  });

  it('at start removes old leftovers of a crash (temp files, bytes without a row) and keeps recent ones', () => {
    const { db, dir, outbox } = setup();
    mkdirSync(join(dir, 'tmp'), { recursive: true });
    mkdirSync(join(dir, 'parts'), { recursive: true });
    const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
    const paths = { tmpOld: join(dir, 'tmp', 'aaa'), tmpNew: join(dir, 'tmp', 'bbb'), orphan: join(dir, 'file-0123'), part: join(dir, 'parts', 'part_01') };
    for (const p of Object.values(paths)) writeFileSync(p, 'x');
    for (const p of [paths.tmpOld, paths.orphan, paths.part]) utimesSync(p, old, old);
    filesStore(db, dir, outbox, () => 0);
    expect({ tmpOld: existsSync(paths.tmpOld), tmpNew: existsSync(paths.tmpNew), orphan: existsSync(paths.orphan), part: existsSync(paths.part) }).toEqual({
      tmpOld: false,
      tmpNew: true,
      orphan: false,
      part: false,
    });
  });
});
