/**
 * Project model aliases read synchronously from the instance's SQLite file (router/router-state.ts, the
 * embedded mode): read on every model-addressed request that names an unknown id, so no cache, and every
 * gateway process sharing the file sees a write at once. The queries are the router store's
 * (store/router/router-reads.ts), run here with the SQLite runner's readSync; writes go through the store.
 */
import type { ModelAliasReader } from '../core/store/router-store.js';
import type { Db } from './db.js';
import { aliasOf, routerReads } from './router/router-reads.js';
import { first, rows } from './sql/sql-program.js';
import { createSqliteRunner } from './sql/sqlite-runner.js';

export function createModelAliasesRepo(db: Db): ModelAliasReader {
  const runner = createSqliteRunner(db);
  const reads = routerReads('sqlite');
  return {
    get: (projectId, alias) => {
      const row = runner.readSync(first(reads.alias(projectId, alias)));
      return row ? aliasOf(row) : null;
    },
    list: (projectId) => runner.readSync(rows(reads.aliases(projectId))).map(aliasOf),
  };
}
