/** The exec agents store contract, the one store on SQLite (a temp file) and PostgreSQL (a fresh database per test). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll } from 'vitest';
import { openDatabase } from '../../src/store/db.js';
import { createExecAgentsStore } from '../../src/store/exec-agents/exec-agents-store.js';
import { openPostgres } from '../../src/store/postgres/pg-store.js';
import { createPostgresRunner } from '../../src/store/sql/postgres-runner.js';
import { createSqliteRunner } from '../../src/store/sql/sqlite-runner.js';
import { postgresTransactionEvents, sqliteTransactionEvents } from '../../src/store/sql/transaction-events.js';
import { freshDatabase, requirePostgres } from '../helpers/postgres.js';
import { recordingOutbox } from './recording-outbox.js';
import { AGENT_EVENT_TYPES, execAgentsStoreContract } from './exec-agents-store-contract.js';

beforeAll(requirePostgres);

execAgentsStoreContract('SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-exec-agents-store-'));
  const db = openDatabase(join(dir, 'store.db'));
  for (const p of ['proj_a', 'proj_b']) {
    db.prepare("INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES (?, ?, ?, ?, 'paid', 0, 0, 0, 0)").run(p, `u-${p}`, p, p);
  }
  const outbox = recordingOutbox(db);
  return {
    store: createExecAgentsStore({ runner: createSqliteRunner(db), events: sqliteTransactionEvents(outbox) }),
    events: async () => outbox.types(),
    close: async () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

execAgentsStoreContract('PostgreSQL', async () => {
  const database = await freshDatabase();
  const pg = await openPostgres({ url: database.url, poolSize: 4, listen: false });
  // An endpoint per project subscribed to the agent events: events nobody subscribes to are not kept.
  for (const p of ['proj_a', 'proj_b']) {
    await pg.pool.query(
      `INSERT INTO webhook_endpoints (id, project_id, url, secret_sealed, events, is_active, metadata, created_at, updated_at)
       VALUES ($1, $2, 'https://receiver.example/', 'sealed', $3, true, '{}', 0, 0)`,
      [`wh_${p}`, p, AGENT_EVENT_TYPES],
    );
  }
  return {
    store: createExecAgentsStore({ runner: createPostgresRunner(pg), events: postgresTransactionEvents() }),
    events: async () => (await pg.pool.query<{ type: string }>('SELECT type FROM webhook_events ORDER BY seq')).rows.map((r) => r.type),
    close: async () => {
      await pg.close();
      await database.drop();
    },
  };
});
