/** The identity contract against the one store on both backends: this instance's SQLite file, and a fresh PostgreSQL database per test. */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll } from 'vitest';
import { openDatabase } from '../../src/store/db.js';
import { openPostgres } from '../../src/store/postgres/pg-store.js';
import { createIdentityStore } from '../../src/store/identity/identity-store.js';
import { createPostgresRunner } from '../../src/store/sql/postgres-runner.js';
import { createSqliteRunner } from '../../src/store/sql/sqlite-runner.js';
import { tempDir } from '../helpers/processes.js';
import { freshDatabase, requirePostgres } from '../helpers/postgres.js';
import { identityStoreContract } from './identity-store-contract.js';

let keys = 0;

identityStoreContract('SQLite', async () => {
  const dir = tempDir();
  const db = openDatabase(join(dir, 'switchboard.db'));
  db.prepare(
    "INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES ('proj_a', 'u-a', 'a', 'A', 'paid', 0, 0, 0, 0)",
  ).run();
  return {
    store: createIdentityStore(createSqliteRunner(db)),
    async seedKey(userId) {
      const id = `key_${++keys}`;
      db.prepare(
        `INSERT INTO api_keys (id, project_id, prefix, scopes, allowed_ips, blocked_ips, quota_requests, quota_window, user_id, source, created_at)
         VALUES (?, 'proj_a', 'svc_a_AAAA', '["inference"]', '[]', '[]', 0, 60, ?, 'dashboard', 0)`,
      ).run(id, userId);
      return id;
    },
    revokedReason: async (keyId) => db.prepare<[string], { revoked_reason: string | null }>('SELECT revoked_reason FROM api_keys WHERE id = ?').get(keyId)?.revoked_reason ?? null,
    async close() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

{
  beforeAll(requirePostgres);
  identityStoreContract('PostgreSQL', async () => {
    const database = await freshDatabase();
    const pg = await openPostgres({ url: database.url, poolSize: 4, listen: false });
    // api_keys belongs to 001-catalog (the catalog's own aggregate); while that migration does not create it
    // yet, the same columns as SQLite's stand in, so the revocation is tested against a real table.
    await pg.pool.query(`CREATE TABLE IF NOT EXISTS api_keys (
      id TEXT PRIMARY KEY, project_id TEXT NOT NULL, name TEXT, prefix TEXT NOT NULL, scopes TEXT NOT NULL, allowed_ips TEXT NOT NULL,
      blocked_ips TEXT NOT NULL, expires_at BIGINT, quota_requests BIGINT NOT NULL, quota_window BIGINT NOT NULL, endpoint_id TEXT,
      allowed_workspace_ids TEXT, user_id TEXT, source TEXT NOT NULL, created_at BIGINT NOT NULL, revoked_at BIGINT, revoked_reason TEXT)`);
    // 001-catalog's api_keys references its projects: the keys' project, when that table is there.
    const { rows } = await pg.pool.query<{ t: string | null }>("SELECT to_regclass('projects')::text AS t");
    if (rows[0]?.t) {
      await pg.pool.query(
        "INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES ('proj_a', 'u-a', 'a', 'A', 'paid', 0, 0, 0, 0)",
      );
    }
    return {
      store: createIdentityStore(createPostgresRunner(pg)),
      async seedKey(userId) {
        const id = `key_${++keys}`;
        await pg.pool.query(
          `INSERT INTO api_keys (id, project_id, prefix, scopes, allowed_ips, blocked_ips, quota_requests, quota_window, user_id, source, created_at)
           VALUES ($1, 'proj_a', 'svc_a_AAAA', '["inference"]', '[]', '[]', 0, 60, $2, 'dashboard', 0)`,
          [id, userId],
        );
        return id;
      },
      async revokedReason(keyId) {
        const { rows } = await pg.pool.query<{ revoked_reason: string | null }>('SELECT revoked_reason FROM api_keys WHERE id = $1', [keyId]);
        return rows[0]?.revoked_reason ?? null;
      },
      async close() {
        await pg.close();
        await database.drop();
      },
    };
  });
}
