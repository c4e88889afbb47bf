/** The usage store contract against SQLite (a temp file through openDatabase) and PostgreSQL (a fresh database a test). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { openDatabase } from '../../src/store/db.js';
import { openPostgres } from '../../src/store/postgres/pg-store.js';
import { createPgUsageStore } from '../../src/store/postgres/usage-store.js';
import { createSqliteUsageStore } from '../../src/store/sqlite/usage-store.js';
import { freshDatabase, requirePostgres } from '../helpers/postgres.js';
import { usageStoreContract } from './usage-store-contract.js';

const dir = mkdtempSync(join(tmpdir(), 'usage-store-contract-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

usageStoreContract('SQLite', async () => {
  const db = openDatabase(join(dir, `usage-${(files += 1)}.db`));
  const store = createSqliteUsageStore(db);
  return {
    store,
    addProject: async (id) =>
      void db.prepare(`INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES (?, ?, ?, 'P', 'paid', 60, 0, 0, 0)`).run(id, id, id),
    close: async () => {
      await store.close();
      db.close();
    },
  };
});

beforeAll(requirePostgres);

usageStoreContract('PostgreSQL', async () => {
  const database = await freshDatabase();
  const pg = await openPostgres({ url: database.url, poolSize: 2, listen: false });
  return {
    store: createPgUsageStore(pg),
    addProject: async () => undefined,
    close: async () => {
      await pg.close();
      await database.drop();
    },
  };
});
