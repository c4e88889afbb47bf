/**
 * Per-endpoint latency objectives read synchronously from the instance's SQLite file (router/
 * router-state.ts, the embedded mode): once per routed turn that has a choice to make, no cache, so every
 * process sharing the file agrees. The query is the router store's (store/router/router-reads.ts), run
 * here with the SQLite runner's readSync; writes go through the store.
 */
import type { EndpointSlo } from '../core/store/router-store.js';
import type { Db } from './db.js';
import { routerReads, sloOf } from './router/router-reads.js';
import { rows } from './sql/sql-program.js';
import { createSqliteRunner } from './sql/sqlite-runner.js';

export interface SlosReader {
  list(projectId: string): EndpointSlo[];
}

export function createSlosRepo(db: Db): SlosReader {
  const runner = createSqliteRunner(db);
  const reads = routerReads('sqlite');
  return { list: (projectId) => runner.readSync(rows(reads.slos(projectId))).map(sloOf) };
}
