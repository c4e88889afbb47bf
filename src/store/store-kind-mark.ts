/**
 * Which store a SQLite file belongs to, written into the file itself (SQLite's `application_id` header
 * field): with `storage.kind: postgres` each replica still keeps a SQLite file of its own, but the
 * aggregates the replicas share (the usage ledger, keys, users) live in PostgreSQL. A CLI command handed
 * such a file with `--db` would read an empty ledger and print zeros as if they were the truth; the mark
 * lets it refuse and name `--config` instead (issue 34).
 */
import type { Db } from './db.js';

/** "SBPG": this file is a replica's own beside PostgreSQL. 0 (SQLite's default): the file is the store. */
const POSTGRES_COMPANION = 0x53425047;

export function markStoreKind(db: Db, kind: 'sqlite' | 'postgres'): void {
  const want = kind === 'postgres' ? POSTGRES_COMPANION : 0;
  if (db.pragma('application_id', { simple: true }) !== want) db.pragma(`application_id = ${want}`);
}

export function isPostgresCompanion(db: Db): boolean {
  return db.pragma('application_id', { simple: true }) === POSTGRES_COMPANION;
}
