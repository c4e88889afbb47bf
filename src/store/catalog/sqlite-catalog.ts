/**
 * The catalog's programs (catalog-store.ts) run synchronously on a SQLite file, for the callers that are:
 * the in-memory catalog (store/catalog.ts) looks a key up on its first use on the request path, batch lines
 * find their key, the CLI and the start-up sync write before anything else runs. No SQL of its own: each
 * method is the port's program under the SQLite runner's readSync/writeSync (a write is one IMMEDIATE
 * transaction), and the queries it runs are compiled once.
 */
import type { Statement } from 'better-sqlite3';
import type { CompiledQuery } from 'kysely';
import type { Config, Scope } from '../../config.js';
import type { ApiKeyRecord, KeyCredential } from '../../core/records.js';
import type { CatalogSnapshot, KeyRotation, NewApiKey, SyncSummary } from '../../core/store/catalog-store.js';
import type { Db } from '../db.js';
import { createSqliteRunner } from '../sql/sqlite-runner.js';
import { catalogReads } from './catalog-reads.js';
import { toCredential, type CredentialRow } from './catalog-rows.js';
import { catalogPrograms } from './catalog-store.js';

export interface SqliteCatalog {
  /** The config file into the store, in one transaction (config-sync.ts). */
  syncConfig(config: Config, now: number): SyncSummary;
  /** Projects, live workspaces and live endpoints (credentials are asked per key). */
  snapshot(): Omit<CatalogSnapshot, 'credentials'>;
  findCredential(hash: string): KeyCredential | null;
  findInProject(projectId: string, id: string): ApiKeyRecord | null;
  insert(key: NewApiKey, hash: string): void;
  revoke(id: string, now: number, reason: string): boolean;
  /** The port's rotation: an active key only, checked under the same write lock; false otherwise. */
  rotate(rotation: KeyRotation): boolean;
}

export function createSqliteCatalog(db: Db): SqliteCatalog {
  const runner = createSqliteRunner(db);
  const p = catalogPrograms('sqlite');
  const reads = catalogReads('sqlite');
  let credentialByHash: Statement | null = null;
  return {
    syncConfig: (config, now) => runner.writeSync(p.syncConfig(config, now)),
    snapshot: () => runner.readSync(p.snapshot()),
    findCredential(hash) {
      credentialByHash ??= statementOfHash(db, reads.credential(hash).compile(), hash);
      const row = credentialByHash.get(hash) as CredentialRow | undefined;
      return row ? toCredential(row) : null;
    },
    findInProject: (projectId, id) => runner.readSync(p.findInProject(projectId, id)),
    insert: (key, hash) => runner.writeSync(p.insert(key, hash)),
    revoke: (id, now, reason) => runner.writeSync(p.revoke(id, now, reason)),
    rotate: (rotation) => runner.writeSync(p.rotate(rotation)),
  };
}

/**
 * The request path (see above): the port's query, compiled once by catalog-reads.ts and prepared here once,
 * its one parameter bound straight to the statement. Binding the compiled query per call, as `firstSync`
 * does, cost ~0.4 us of a ~1.7 us miss (bench/key-lookup.ts), and every unknown key is a miss.
 */
function statementOfHash(db: Db, query: CompiledQuery, hash: string): Statement {
  if (query.parameters.length !== 1 || query.parameters[0] !== hash) throw new Error('the credential query must take the value hash as its only parameter');
  return db.prepare(query.sql);
}

/** The config file synced into this SQLite file (start-up, and the CLI before it reads the store). */
export function syncConfig(db: Db, config: Config, now: number): SyncSummary {
  return createSqliteCatalog(db).syncConfig(config, now);
}
