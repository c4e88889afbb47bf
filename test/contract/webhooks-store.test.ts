/** The webhooks store contract against SQLite (a temp file) and PostgreSQL (a fresh database per test). */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll } from 'vitest';
import { openDatabase } from '../../src/store/db.js';
import { openPostgres } from '../../src/store/postgres/pg-store.js';
import { createSecretBox } from '../../src/store/secret-box.js';
import { createPostgresRunner } from '../../src/store/sql/postgres-runner.js';
import { createSqliteRunner } from '../../src/store/sql/sqlite-runner.js';
import { createWebhooksStore } from '../../src/store/webhooks/webhooks-store.js';
import { freshDatabase, requirePostgres } from '../helpers/postgres.js';
import { webhooksStoreContract } from './webhooks-store-contract.js';

beforeAll(requirePostgres);

webhooksStoreContract('SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-webhooks-store-'));
  const db = openDatabase(join(dir, 'store.db'));
  for (const p of ['proj_a', 'proj_b']) {
    db.prepare("INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES (?, ?, ?, ?, 'paid', 0, 0, 0, 0)").run(p, `u-${p}`, p, p);
  }
  const store = createWebhooksStore({ runner: createSqliteRunner(db), box: createSecretBox(randomBytes(32)) });
  return {
    store,
    register: async (id) => void db.prepare("INSERT INTO gateway_instances (id, pid, thread_id, host, pid_scope, started_at, heartbeat_at) VALUES (?, 1, 0, 'h', '', 0, 0)").run(id),
    unregister: async (id) => void db.prepare('DELETE FROM gateway_instances WHERE id = ?').run(id),
    close: async () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

webhooksStoreContract('PostgreSQL', async () => {
  const database = await freshDatabase();
  const pg = await openPostgres({ url: database.url, poolSize: 4, listen: false });
  const store = createWebhooksStore({ runner: createPostgresRunner(pg), box: createSecretBox(randomBytes(32)) });
  return {
    store,
    register: async (id) => void (await pg.pool.query("INSERT INTO gateway_instances (id, pid, host, pid_scope, started_at, heartbeat_at) VALUES ($1, 1, 'h', '', 0, 0)", [id])),
    unregister: async (id) => void (await pg.pool.query('DELETE FROM gateway_instances WHERE id = $1', [id])),
    close: async () => {
      await pg.close();
      await database.drop();
    },
  };
});
