/**
 * The one better-sqlite3 Database: opened in WAL mode with synchronous=FULL, so a committed transaction
 * survives a process crash and a power loss. Migrations are applied in order inside one transaction each,
 * tracked by `PRAGMA user_version`.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { migration001 } from './migrations/001-platform.js';
import { migration002 } from './migrations/002-usage.js';
import { migration003 } from './migrations/003-limits-keys.js';
import { migration004 } from './migrations/004-webhooks.js';
import { migration005 } from './migrations/005-router.js';

export type Db = Database.Database;

// Versions are positions in this list: a new migration is appended, never inserted.
const MIGRATIONS: readonly string[] = [migration001, migration002, migration003, migration004, migration005];

/**
 * `FULL` (the default) fsyncs every commit: for management writes, rare and precious. `NORMAL` is for
 * the usage ledger's own connection: in WAL mode a NORMAL commit survives a process crash (only a power
 * loss can roll back the last commits), and it never fsyncs on the event loop per batch.
 */
export function openDatabase(path: string, synchronous: 'FULL' | 'NORMAL' = 'FULL'): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma('foreign_keys = ON');
  // The CLI (`switchboard keys create`) may write while the gateway runs.
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
}

function migrate(db: Db): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new Error(`the database schema (version ${current}) is newer than this build (${MIGRATIONS.length})`);
  }
  MIGRATIONS.slice(current).forEach((sql, i) => {
    db.transaction(() => {
      db.exec(sql);
      db.pragma(`user_version = ${current + i + 1}`);
    })();
  });
}

/** Changes whenever another connection (another process) commits: the cue to reload caches. */
export function dataVersion(db: Db): number {
  return db.pragma('data_version', { simple: true }) as number;
}
