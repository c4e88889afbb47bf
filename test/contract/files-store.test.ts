/** The files store contract against SQLite with bytes on disk (a temp folder) and PostgreSQL (a fresh database per test). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll } from 'vitest';
import type { EventOutbox } from '../../src/core/webhooks/outbox.js';
import { openDatabase } from '../../src/store/db.js';
import { createFilesStore } from '../../src/store/files/files-store.js';
import { createPgFileBytes } from '../../src/store/postgres/pg-file-bytes.js';
import { openPostgres } from '../../src/store/postgres/pg-store.js';
import { createPostgresRunner } from '../../src/store/sql/postgres-runner.js';
import { createSqliteRunner } from '../../src/store/sql/sqlite-runner.js';
import { postgresTransactionEvents, sqliteTransactionEvents } from '../../src/store/sql/transaction-events.js';
import { createDiskFileBytes } from '../../src/store/sqlite/disk-file-bytes.js';
import { freshDatabase, requirePostgres } from '../helpers/postgres.js';
import { filesStoreContract } from './files-store-contract.js';

beforeAll(requirePostgres);

filesStoreContract('SQLite', async (clock) => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-files-store-'));
  const db = openDatabase(join(dir, 'store.db'));
  for (const p of ['proj_a', 'proj_b']) {
    db.prepare("INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES (?, ?, ?, ?, 'paid', 0, 0, 0, 0)").run(p, `u-${p}`, p, p);
  }
  const emitted: string[] = [];
  // The events' own rows are the outbox's contract (webhook-outbox tests); here: which, in what order.
  const outbox: EventOutbox = { emit: (_p, type) => (emitted.push(type), 1), emitBudgetThreshold: () => 0 };
  const store = createFilesStore({
    runner: createSqliteRunner(db),
    events: sqliteTransactionEvents(outbox),
    bytes: createDiskFileBytes(db, join(dir, 'files')),
    now: () => clock.now,
  });
  return {
    store,
    events: async () => [...emitted],
    close: async () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

filesStoreContract('PostgreSQL', async (clock) => {
  const database = await freshDatabase();
  const pg = await openPostgres({ url: database.url, poolSize: 4, listen: false });
  // An endpoint per project subscribed to file.*: events nobody subscribes to are not kept (webhooks-store.ts).
  for (const p of ['proj_a', 'proj_b']) {
    await pg.pool.query(
      `INSERT INTO webhook_endpoints (id, project_id, url, secret_sealed, events, is_active, metadata, created_at, updated_at)
       VALUES ($1, $2, 'https://receiver.example/', 'sealed', ARRAY['file.uploaded', 'file.deleted'], true, '{}', 0, 0)`,
      [`wh_${p}`, p],
    );
  }
  return {
    store: createFilesStore({ runner: createPostgresRunner(pg), events: postgresTransactionEvents(), bytes: createPgFileBytes(pg.pool), now: () => clock.now }),
    events: async () => (await pg.pool.query<{ type: string }>('SELECT type FROM webhook_events ORDER BY seq')).rows.map((r) => r.type),
    close: async () => {
      await pg.close();
      await database.drop();
    },
  };
});
