/**
 * The one better-sqlite3 Database: opened in WAL mode with synchronous=FULL, so a committed transaction
 * survives a process crash and a power loss. Migrations are tracked by `PRAGMA user_version` and applied
 * under the write lock, so processes that open one file at the same moment migrate it exactly once.
 *
 * Several connections write to one file: this one (management routes, config sync), the usage and
 * decision writer threads, the webhook dispatcher, and other processes (the CLI, a second gateway). Every
 * write transaction therefore begins IMMEDIATE (`writeTransaction` below); see its comment for why.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { migration001 } from './migrations/001-platform.js';
import { migration002 } from './migrations/002-usage.js';
import { migration003 } from './migrations/003-limits-keys.js';
import { migration004 } from './migrations/004-webhooks.js';
import { migration005 } from './migrations/005-router.js';
import { migration006 } from './migrations/006-usage-cost.js';
import { migration007 } from './migrations/007-exec-agents.js';
import { migration008 } from './migrations/008-exec-invocations.js';
import { migration009 as responsesMigration } from './migrations/009-responses.js';
import { migration010 } from './migrations/010-files.js';
import { migration011 } from './migrations/011-batches.js';
import { migration012 } from './migrations/012-slos-model-aliases.js';
import { migrationUsageJournal } from './migrations/013-usage-journal.js';
import { migrationUsageSpendRollup } from './migrations/014-usage-spend-rollup.js';
import { migrationDashboardUsers } from './migrations/015-dashboard-users.js';
import { migrationInstances } from './migrations/016-instances.js';
import { migrationApprovalRequester } from './migrations/017-approval-requester.js';
import { migrationUsageRequestDetail } from './migrations/018-usage-request-detail.js';
import { migrationUsageRollupByBatch } from './migrations/019-usage-rollup-by-batch.js';
import { migrationKeyIssuer } from './migrations/020-key-issuer.js';

export type Db = Database.Database;

// Versions are positions in this list: a new migration is appended, never inserted.
const MIGRATIONS: readonly string[] = [migration001, migration002, migration003, migration004, migration005, migration006, migration007, migration008, responsesMigration, migration010, migration011, migration012, migrationUsageJournal, migrationUsageSpendRollup, migrationDashboardUsers, migrationInstances, migrationApprovalRequester, migrationUsageRequestDetail, migrationUsageRollupByBatch, migrationKeyIssuer];

/**
 * How long a connection waits for another's write lock before SQLITE_BUSY. Every transaction that
 * waits here is short (a management write, a batch of usage rows), so 5 s is only reached when the
 * disk has stalled. Set through the constructor, so it is in force from the very first statement.
 */
export const BUSY_TIMEOUT_MS = 5000;

/**
 * Where a connection commits. SQLite checkpoints the WAL (copies its pages into the database file, then
 * fsyncs both) inside whichever commit finds the WAL past 1,000 pages: under stored Responses that was the
 * event loop's connection, every ~0.7 s, with two fsyncs of 3.5-4.6 ms each on the event loop (strace, issue
 * 35 round 8). A connection on the event loop (`'event-loop'`) therefore never checkpoints; the store's
 * writer thread does it for every connection of the file (store-writer-thread.ts), in its own commits and
 * once a second. CLI commands and threads open theirs `'apart'` (SQLite's default: 1,000 pages).
 */
export type ConnectionSite = 'event-loop' | 'apart';

/**
 * A second connection to the store's file for work on the event loop: `NORMAL`, and never checkpointing
 * (ConnectionSite). An in-memory store has no file to open twice: its one connection serves.
 */
export function eventLoopSibling(db: Db, path: string): Db {
  return path === ':memory:' ? db : openDatabase(path, 'NORMAL', 'event-loop');
}

/**
 * `FULL` (the default) fsyncs every commit: for management writes, rare and precious. `NORMAL` is for
 * the usage ledger's own connection: in WAL mode a NORMAL commit survives a process crash (only a power
 * loss can roll back the last commits), and it never fsyncs on the event loop per batch.
 */
export function openDatabase(path: string, synchronous: 'FULL' | 'NORMAL' = 'FULL', where: ConnectionSite = 'apart'): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path, { timeout: BUSY_TIMEOUT_MS });
  enterWalMode(db, path);
  db.pragma(`synchronous = ${synchronous}`);
  if (where === 'event-loop') db.pragma('wal_autocheckpoint = 0');
  db.pragma('foreign_keys = ON');
  migrate(db);
  return db;
}

/** Atomics.wait on a cell nobody notifies: a synchronous sleep between tries, as the busy handler sleeps. */
const WAL_RETRY_WAIT = new Int32Array(new SharedArrayBuffer(4));

/**
 * Turning a new file to WAL needs an exclusive lock, and SQLite asks for it without calling the busy
 * handler: of 5 to 8 processes opening one new file at once, some got SQLITE_BUSY here at once. So it is
 * retried, as the busy handler would have, for up to BUSY_TIMEOUT_MS; so is an answer other than "wal"
 * (SQLite's way of saying the mode could not change). A file already in WAL mode answers at once.
 */
function enterWalMode(db: Db, path: string): void {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (;;) {
    let failure: unknown = null;
    try {
      const mode = db.pragma('journal_mode = WAL', { simple: true });
      // An in-memory database has no WAL; it stays "memory".
      if (mode === 'wal' || path === ':memory:') return;
      failure = new Error(`the database stayed in journal mode ${String(mode)}; WAL mode is required`);
    } catch (err) {
      if (!(err instanceof Database.SqliteError) || err.code !== 'SQLITE_BUSY') throw err;
      failure = err;
    }
    if (Date.now() >= deadline) throw failure;
    Atomics.wait(WAL_RETRY_WAIT, 0, 0, 10);
  }
}

/**
 * `fn` as a transaction that begins IMMEDIATE: it takes the write lock first, waiting up to
 * BUSY_TIMEOUT_MS for it, and only then reads. The store's only way to open a transaction.
 *
 * A plain (deferred) BEGIN starts as a reader. If its first statement is a read (a count before an
 * insert, a row before its update), the later write must upgrade that read snapshot to the write lock,
 * and SQLite refuses the upgrade at once, without the busy handler: SQLITE_BUSY while another connection
 * holds the lock, SQLITE_BUSY_SNAPSHOT once another has committed since the read (retrying could not help:
 * the snapshot is stale). With the usage writer thread committing every 50 ms, that made webhook writes
 * answer 500 beside chat traffic (issue 19). A transaction that writes first was safe, but every
 * transaction goes through here so that adding a read at its top can never bring the failure back.
 * Called inside another transaction, it runs as a savepoint of that one (better-sqlite3).
 */
export function writeTransaction<A extends unknown[], R>(db: Db, fn: (...args: A) => R): (...args: A) => R {
  return db.transaction(fn).immediate;
}

/**
 * A step of a transaction writeTransaction opened, rolled back alone when it throws: better-sqlite3 runs a
 * transaction function called inside another one as a SAVEPOINT. Outside a transaction it would open a
 * plain deferred one, so there it refuses to run.
 */
export function savepoint<A extends unknown[], R>(db: Db, fn: (...args: A) => R): (...args: A) => R {
  const step = db.transaction(fn);
  return (...args) => {
    if (!db.inTransaction) throw new Error('a savepoint runs only inside a write transaction');
    return step(...args);
  };
}

const schemaVersion = (db: Db): number => db.pragma('user_version', { simple: true }) as number;

/**
 * A store migrated by a newer build. Migrations only go forward, so this build cannot know what the newer
 * schema means: it refuses to start (exit 2, like a bad config: restarting cannot help).
 */
export class StoreTooNewError extends Error {
  constructor(version: number) {
    super(`the database schema (version ${version}) is newer than this build (${MIGRATIONS.length}): run the newer build, or restore a backup made before the upgrade`);
    this.name = 'StoreTooNewError';
  }
}

function requireKnownVersion(version: number): void {
  if (version > MIGRATIONS.length) throw new StoreTooNewError(version);
}

/**
 * Applies the pending migrations in one immediate transaction, so a fresh file is never left half
 * migrated. The version is read again under the write lock: processes started together on one fresh
 * file all read version 0 before any of them migrated, and each then replayed migration 001
 * (`table projects already exists`, issue 19). The first read only spares an up-to-date store (every
 * open of a running gateway's threads) the write lock: versions only grow, so "current" stays current.
 */
function migrate(db: Db): void {
  const seen = schemaVersion(db);
  requireKnownVersion(seen);
  if (seen === MIGRATIONS.length) return;
  writeTransaction(db, () => {
    const current = schemaVersion(db);
    requireKnownVersion(current);
    for (const sql of MIGRATIONS.slice(current)) db.exec(sql);
    db.pragma(`user_version = ${MIGRATIONS.length}`);
  })();
}

/** Changes whenever another connection (another process) commits: the cue to reload caches. */
export function dataVersion(db: Db): number {
  return db.pragma('data_version', { simple: true }) as number;
}
