/** The batches store contract against SQLite (a temp file) and PostgreSQL (a fresh database per test). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll } from 'vitest';
import type { EventOutbox } from '../../src/core/webhooks/outbox.js';
import { createBatchesStore } from '../../src/store/batches/batches-store.js';
import { openDatabase } from '../../src/store/db.js';
import { openPostgres } from '../../src/store/postgres/pg-store.js';
import { createPostgresRunner } from '../../src/store/sql/postgres-runner.js';
import { createSqliteRunner } from '../../src/store/sql/sqlite-runner.js';
import { postgresTransactionEvents, sqliteTransactionEvents } from '../../src/store/sql/transaction-events.js';
import { freshDatabase, requirePostgres } from '../helpers/postgres.js';
import { batchesStoreContract, OWNER } from './batches-store-contract.js';

beforeAll(requirePostgres);

batchesStoreContract('SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-batches-store-'));
  const db = openDatabase(join(dir, 'store.db'));
  for (const p of ['proj_a', 'proj_b']) {
    db.prepare("INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES (?, ?, ?, ?, 'paid', 0, 0, 0, 0)").run(p, `u-${p}`, p, p);
  }
  db.prepare("INSERT INTO gateway_instances (id, pid, thread_id, host, pid_scope, started_at, heartbeat_at) VALUES (?, 1, 0, 'h', '', 0, 0)").run(OWNER);
  const emitted: string[] = [];
  // The events' own rows are the outbox's contract; here: which, in what order.
  const outbox: EventOutbox = { emit: (_p, type) => (emitted.push(type), 1), emitBudgetThreshold: () => 0 };
  return {
    store: createBatchesStore({ runner: createSqliteRunner(db), events: sqliteTransactionEvents(outbox), owner: OWNER }),
    unregister: async () => void db.prepare('DELETE FROM gateway_instances WHERE id = ?').run(OWNER),
    events: async () => [...emitted],
    close: async () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

batchesStoreContract('PostgreSQL', async () => {
  const database = await freshDatabase();
  const pg = await openPostgres({ url: database.url, poolSize: 4, listen: false });
  await pg.pool.query("INSERT INTO gateway_instances (id, pid, host, pid_scope, started_at, heartbeat_at) VALUES ($1, 1, 'h', '', 0, 0)", [OWNER]);
  // An endpoint per project subscribed to batch.*: events nobody subscribes to are not kept (webhooks-store.ts).
  for (const p of ['proj_a', 'proj_b']) {
    await pg.pool.query(
      `INSERT INTO webhook_endpoints (id, project_id, url, secret_sealed, events, is_active, metadata, created_at, updated_at)
       VALUES ($1, $2, 'https://receiver.example/', 'sealed', ARRAY['batch.completed', 'batch.failed', 'batch.cancelled'], true, '{}', 0, 0)`,
      [`wh_${p}`, p],
    );
  }
  return {
    store: createBatchesStore({ runner: createPostgresRunner(pg), events: postgresTransactionEvents(), owner: OWNER }),
    unregister: async () => void (await pg.pool.query('DELETE FROM gateway_instances WHERE id = $1', [OWNER])),
    events: async () => (await pg.pool.query<{ type: string }>('SELECT type FROM webhook_events ORDER BY seq')).rows.map((r) => r.type),
    close: async () => {
      await pg.close();
      await database.drop();
    },
  };
});
