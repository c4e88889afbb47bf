/**
 * The replica suite (replica-suite.ts) on PostgreSQL: one database shared by the three replicas, each
 * with a SQLite file of its own, as replicas on three hosts would run (docs/deploy.md).
 */
import { beforeAll } from 'vitest';
import { freshDatabase, PG_GATEWAY_ENV, requirePostgres } from '../helpers/postgres.js';
import { replicaSuite } from './replica-suite.js';

beforeAll(requirePostgres);

replicaSuite('PostgreSQL', async () => {
  const db = await freshDatabase();
  return {
    storage: { kind: 'postgres', url: db.url },
    dbPath: (dir, i) => `${dir}/replica-${i}.db`,
    env: PG_GATEWAY_ENV,
    close: db.drop,
  };
});
