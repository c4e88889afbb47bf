/**
 * The catalog port (core/store/catalog-store.ts), written once for SQLite and PostgreSQL (issue 33): each
 * method is a program (sql/sql-program.ts) its backend's runner drives. The reads are catalog-reads.ts's,
 * compiled once; the key writes catalog-keys.ts's; the config sync config-sync.ts's. Every write that
 * changed a row notifies 'catalog' inside its transaction, so on PostgreSQL each replica's in-memory
 * catalog (store/catalog.ts) reloads once it commits; on SQLite the processes sharing the file notice it
 * through data_version.
 *
 * The snapshot differs by backend on purpose: PostgreSQL's replicas hold every credential in memory (read
 * in one REPEATABLE READ snapshot, so a key never appears before its project), SQLite's catalog asks per
 * key on first use (`credentials: null`), synchronously (sqlite-catalog.ts).
 */
import type { Config, Scope } from '../../config.js';
import type { KeyCredential } from '../../core/records.js';
import type { CatalogSnapshot, CatalogStore, KeyRotation, NewApiKey, SyncSummary } from '../../core/store/catalog-store.js';
import { sqlFor } from '../sql/sql-builder.js';
import { first, native, rows, type SqlDialect, type SqlProgram } from '../sql/sql-program.js';
import type { SqlRunner } from '../sql/sql-runner.js';
import { keyPrograms } from './catalog-keys.js';
import { catalogReads, type CatalogReads } from './catalog-reads.js';
import { toCredential, toEndpoint, toKey, toProject, toWorkspace } from './catalog-rows.js';
import type { CatalogTables } from './catalog-tables.js';
import { syncConfigProgram } from './config-sync.js';

/** The port's operations as programs, for a runner's `read`/`write` or, on SQLite, `readSync`/`writeSync`. */
export function catalogPrograms(dialect: SqlDialect) {
  const { db } = sqlFor<CatalogTables>(dialect);
  const reads = catalogReads(dialect);
  const keys = keyPrograms(db, dialect);
  return {
    syncConfig: (config: Config, now: number): SqlProgram<SyncSummary> => syncConfigProgram(db, reads, keys, config, now),
    snapshot: (): SqlProgram<CatalogSnapshot> => snapshot(dialect, reads),
    *findCredential(hash: string): SqlProgram<KeyCredential | null> {
      const row = yield* first(reads.credential(hash));
      return row ? toCredential(row) : null;
    },
    *listForProject(projectId: string) {
      return (yield* rows(reads.keysOfProject(projectId))).map(toKey);
    },
    *findInProject(projectId: string, id: string) {
      const row = yield* first(reads.keyInProject(projectId, id));
      return row ? toKey(row) : null;
    },
    *rotatedValuesValidUntil(projectId: string) {
      return new Map((yield* rows(reads.graceOfProject(projectId))).map((r) => [r.key_id, Number(r.valid_until)]));
    },
    insert: (key: NewApiKey, hash: string) => keys.insert(key, hash),
    revoke: (id: string, now: number, reason: string) => keys.revoke(id, now, reason),
    rotate: (rotation: KeyRotation) => keys.rotate(rotation),
  };
}

export type CatalogPrograms = ReturnType<typeof catalogPrograms>;

/** PostgreSQL: the first statement of the snapshot's transaction; SQLite's catalog reads no credentials here. */
const repeatableRead = (): SqlProgram<void> =>
  native({
    sqlite: () => undefined,
    postgres: async (client) => {
      await client.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
    },
  });

function* snapshot(dialect: SqlDialect, reads: CatalogReads): SqlProgram<CatalogSnapshot> {
  const preloaded = dialect === 'postgres';
  if (preloaded) yield* repeatableRead();
  const projects = (yield* rows(reads.projects())).map(toProject);
  const workspaces = (yield* rows(reads.workspaces())).map(toWorkspace);
  const endpoints = (yield* rows(reads.endpoints())).map(toEndpoint);
  if (!preloaded) return { projects, workspaces, endpoints, credentials: null };
  const credentials = new Map<string, KeyCredential>();
  for (const row of yield* rows(reads.allCredentials())) credentials.set(row.hash, toCredential(row));
  return { projects, workspaces, endpoints, credentials };
}

export function createCatalogStore(runner: SqlRunner): CatalogStore {
  const p = catalogPrograms(runner.dialect);
  return {
    syncConfig: (config, now) => runner.write(p.syncConfig(config, now)),
    // PostgreSQL's snapshot is one transaction (see `snapshot`); SQLite reads statement by statement, as
    // its catalog always has, without taking the file's write lock.
    loadSnapshot: () => (runner.dialect === 'postgres' ? runner.write(p.snapshot()) : runner.read(p.snapshot())),
    findCredential: (hash) => runner.read(p.findCredential(hash)),
    listForProject: (projectId) => runner.read(p.listForProject(projectId)),
    findInProject: (projectId, id) => runner.read(p.findInProject(projectId, id)),
    rotatedValuesValidUntil: (projectId) => runner.read(p.rotatedValuesValidUntil(projectId)),
    insert: (key, hash) => runner.write(p.insert(key, hash)),
    revoke: (id, now, reason) => runner.write(p.revoke(id, now, reason)),
    rotate: (rotation) => runner.write(p.rotate(rotation)),
    // The connection belongs to whoever opened it (the SQLite file's opener, the PostgreSQL backend).
    close: async () => undefined,
  };
}
