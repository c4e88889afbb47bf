/** The catalog port's contract (catalog-store-contract.ts) against the one store on both backends: SQLite (a temp file) and PostgreSQL (a fresh database per test). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe } from 'vitest';
import { openDatabase } from '../../src/store/db.js';
import { createCatalogStore } from '../../src/store/catalog/catalog-store.js';
import { openPostgres } from '../../src/store/postgres/pg-store.js';
import { createPostgresRunner } from '../../src/store/sql/postgres-runner.js';
import { createSqliteRunner } from '../../src/store/sql/sqlite-runner.js';
import { freshDatabase, requirePostgres } from '../helpers/postgres.js';
import { catalogStoreContract } from './catalog-store-contract.js';

catalogStoreContract('SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-catalog-'));
  const db = openDatabase(join(dir, 'store.db'));
  return {
    store: createCatalogStore(createSqliteRunner(db)),
    async addOwner(userId, projectId, workspaceIds) {
      db.prepare('INSERT INTO dashboard_users (id, email, name, created_at, updated_at) VALUES (?, ?, ?, 0, 0)').run(userId, `${userId}@example.com`, userId);
      db.prepare("INSERT INTO dashboard_user_roles (user_id, project_id, role, workspace_ids) VALUES (?, ?, 'member', ?)").run(userId, projectId, workspaceIds ? JSON.stringify(workspaceIds) : null);
    },
    async deleteOwner(userId) {
      db.prepare('DELETE FROM dashboard_users WHERE id = ?').run(userId);
    },
    async close() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('PostgreSQL', () => {
  beforeAll(requirePostgres);
  catalogStoreContract('PostgreSQL', async () => {
    const database = await freshDatabase();
    const pg = await openPostgres({ url: database.url, poolSize: 3, listen: false });
    return {
      store: createCatalogStore(createPostgresRunner(pg)),
      async addOwner(userId, projectId, workspaceIds) {
        await pg.pool.query('INSERT INTO dashboard_users (id, email, name, created_at, updated_at) VALUES ($1, $2, $1, 0, 0)', [userId, `${userId}@example.com`]);
        await pg.pool.query("INSERT INTO dashboard_user_roles (user_id, project_id, role, workspace_ids) VALUES ($1, $2, 'member', $3)", [userId, projectId, workspaceIds ? JSON.stringify(workspaceIds) : null]);
      },
      async deleteOwner(userId) {
        await pg.pool.query('DELETE FROM dashboard_users WHERE id = $1', [userId]);
      },
      async close() {
        await pg.close();
        await database.drop();
      },
    };
  });
});
