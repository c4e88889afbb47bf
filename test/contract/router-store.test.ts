/**
 * The router store contract against both implementations: the embedded SQLite file (projects seeded, as
 * its tables reference them) and PostgreSQL (a fresh database per test), where writes also notify every
 * replica.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/db.js';
import { openPostgres, type PgStore } from '../../src/store/postgres/pg-store.js';
import { createPgRouterStore } from '../../src/store/postgres/router-store.js';
import { createSqliteRouterStore } from '../../src/store/sqlite/router-store.js';
import { freshDatabase, requirePostgres, type TestDatabase } from '../helpers/postgres.js';
import { tempDir } from '../helpers/processes.js';
import { PROJECT_A, PROJECT_B, routerStoreContract } from './router-store-contract.js';

routerStoreContract('SQLite', async () => {
  const dir = tempDir();
  const db = openDatabase(join(dir, 'store.db'));
  const seed = db.prepare(
    "INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES (?, ?, ?, 'P', 'paid', 60, 0, 0, 0)",
  );
  for (const id of [PROJECT_A, PROJECT_B]) seed.run(id, `uuid-${id}`, id);
  return {
    store: createSqliteRouterStore(db),
    close: async () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('PostgreSQL', () => {
  beforeAll(requirePostgres);

  let database: TestDatabase | null = null;
  const opened: PgStore[] = [];
  const open = async (url: string): Promise<PgStore> => {
    const pg = await openPostgres({ url, poolSize: 3 });
    opened.push(pg);
    return pg;
  };
  afterEach(async () => {
    for (const pg of opened.splice(0)) await pg.close();
    await database?.drop();
    database = null;
  });

  routerStoreContract('PostgreSQL', async () => {
    database = await freshDatabase();
    const pg = await open(database.url);
    return { store: createPgRouterStore(pg), close: async () => undefined };
  });

  it('tells every replica, the writer too, that router state changed once a write commits', async () => {
    database = await freshDatabase();
    const [a, b] = await Promise.all([open(database.url), open(database.url)]);
    const storeA = createPgRouterStore(a);
    const heard = { a: 0, b: 0 };
    storeA.onChange(() => (heard.a += 1));
    createPgRouterStore(b).onChange(() => (heard.b += 1));
    await storeA.createAlias(PROJECT_A, 'fast', 'model-a', 1);
    await expect.poll(() => heard).toEqual({ a: 1, b: 1 });
    await storeA.putSlo(PROJECT_A, 'e1', { ttftMs: 1, tpotMs: null }, 2);
    await storeA.saveRouterState(PROJECT_A, { settings: {}, rules: [] }, 3);
    await expect.poll(() => heard).toEqual({ a: 3, b: 3 });
  });
});
