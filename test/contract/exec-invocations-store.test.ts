/** The exec invocations store contract against SQLite (a temp file) and PostgreSQL (a fresh database per test). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll } from 'vitest';
import { openDatabase } from '../../src/store/db.js';
import { createExecInvocationsStore } from '../../src/store/exec-invocations/exec-invocations-store.js';
import { openPostgres } from '../../src/store/postgres/pg-store.js';
import { createPostgresRunner } from '../../src/store/sql/postgres-runner.js';
import { createSqliteRunner } from '../../src/store/sql/sqlite-runner.js';
import { postgresTransactionEvents, sqliteTransactionEvents } from '../../src/store/sql/transaction-events.js';
import { freshDatabase, requirePostgres } from '../helpers/postgres.js';
import { recordingOutbox } from './recording-outbox.js';
import { EXEC_EVENT_TYPES, execInvocationsStoreContract, OWNER } from './exec-invocations-store-contract.js';

beforeAll(requirePostgres);

execInvocationsStoreContract('SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-exec-invocations-store-'));
  const db = openDatabase(join(dir, 'store.db'));
  db.prepare("INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES ('proj_a', 'u-a', 'a', 'a', 'paid', 0, 0, 0, 0)").run();
  db.prepare("INSERT INTO gateway_instances (id, pid, thread_id, host, pid_scope, started_at, heartbeat_at) VALUES (?, 1, 0, 'h', '', 0, 0)").run(OWNER);
  const outbox = recordingOutbox(db);
  return {
    store: createExecInvocationsStore({ runner: createSqliteRunner(db), events: sqliteTransactionEvents(outbox), owner: OWNER, now: () => 1_700_000_000_000 }),
    unregister: async () => void db.prepare('DELETE FROM gateway_instances WHERE id = ?').run(OWNER),
    events: async () => outbox.types(),
    close: async () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

execInvocationsStoreContract('PostgreSQL', async () => {
  const database = await freshDatabase();
  const pg = await openPostgres({ url: database.url, poolSize: 4, listen: false });
  await pg.pool.query("INSERT INTO gateway_instances (id, pid, host, pid_scope, started_at, heartbeat_at) VALUES ($1, 1, 'h', '', 0, 0)", [OWNER]);
  await pg.pool.query(
    `INSERT INTO webhook_endpoints (id, project_id, url, secret_sealed, events, is_active, metadata, created_at, updated_at)
     VALUES ('wh_a', 'proj_a', 'https://receiver.example/', 'sealed', $1, true, '{}', 0, 0)`,
    [EXEC_EVENT_TYPES],
  );
  return {
    store: createExecInvocationsStore({ runner: createPostgresRunner(pg), events: postgresTransactionEvents(), owner: OWNER, now: () => 1_700_000_000_000 }),
    unregister: async () => void (await pg.pool.query('DELETE FROM gateway_instances WHERE id = $1', [OWNER])),
    events: async () => (await pg.pool.query<{ type: string }>('SELECT type FROM webhook_events ORDER BY seq')).rows.map((r) => r.type),
    close: async () => {
      await pg.close();
      await database.drop();
    },
  };
});
