/**
 * The batch store's own rate (issue 33: "the batch claim stays at or above bench/RESULTS.md's figures"
 * when the store moved onto programs): one batch of LINES lines validated (inserted), then every line
 * claimed and settled one after another, as the scheduler does, on SQLite (a temp file, the busy
 * connection's synchronous=NORMAL) and on PostgreSQL (a fresh database on 127.0.0.1:5432, dropped after).
 * ROUNDS rounds per backend; the median is printed. No model calls: the store alone.
 *
 *   npm run build && node dist/bench/batch-claims.js [lines] [rounds]
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { parseBatchLine } from '../src/core/batches/batch-lines.js';
import type { BatchesStore } from '../src/core/store/batches-store.js';
import type { EventOutbox } from '../src/core/webhooks/outbox.js';
import { createBatchesStore } from '../src/store/batches/batches-store.js';
import { openDatabase } from '../src/store/db.js';
import { openPostgres } from '../src/store/postgres/pg-store.js';
import { createPostgresRunner } from '../src/store/sql/postgres-runner.js';
import { createSqliteRunner } from '../src/store/sql/sqlite-runner.js';
import { postgresTransactionEvents, sqliteTransactionEvents } from '../src/store/sql/transaction-events.js';

const ADMIN_URL = process.env.SWITCHBOARD_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const LINES = Number(process.argv[2] ?? 2000);
const ROUNDS = Number(process.argv[3] ?? 5);
const OWNER = 'inst_bench';
const noEvents: EventOutbox = { emit: () => 0, emitBudgetThreshold: () => 0 };

interface Backend {
  readonly store: BatchesStore;
  close(): Promise<void>;
}

async function sqliteBackend(): Promise<Backend> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-bench-claims-'));
  const db = openDatabase(join(dir, 'store.db'), 'NORMAL');
  db.prepare("INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES ('proj_b', 'u', 'b', 'B', 'paid', 0, 0, 0, 0)").run();
  db.prepare("INSERT INTO gateway_instances (id, pid, thread_id, host, pid_scope, started_at, heartbeat_at) VALUES (?, 1, 0, 'h', '', 0, 0)").run(OWNER);
  return {
    store: createBatchesStore({ runner: createSqliteRunner(db), events: sqliteTransactionEvents(noEvents), owner: OWNER }),
    close: async () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postgresBackend(): Promise<Backend> {
  const name = `sbbench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const store = await openPostgres({ url: url.toString(), poolSize: 4, listen: false });
  await store.pool.query("INSERT INTO gateway_instances (id, pid, host, pid_scope, started_at, heartbeat_at) VALUES ($1, 1, 'h', '', 0, 0)", [OWNER]);
  return {
    store: createBatchesStore({ runner: createPostgresRunner(store), events: postgresTransactionEvents(), owner: OWNER }),
    close: async () => {
      await store.close();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

/** One batch validated, then claimed and settled line by line: [validate ms, claim+settle lines/s]. */
async function round(store: BatchesStore, n: number): Promise<[number, number]> {
  const id = `batch_${randomBytes(8).toString('hex')}`;
  const now = Date.now();
  await store.insert({ id, project_id: 'proj_b', key_id: 'key_1', workspace_named: null, workspace_named_by: '', endpoint: '/v1/chat/completions', input_file_id: 'file_x', completion_window: '24h', metadata: null, created_at: now, expires_at: now + 86_400_000 });
  const seen = new Set<string>();
  const lines = Array.from({ length: n }, (_, i) => parseBatchLine(JSON.stringify({ custom_id: `c${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: 'm', messages: [{ role: 'user', content: `line ${i}` }] } }), '/v1/chat/completions', seen));
  const validateStart = performance.now();
  await store.validated(id, lines, now);
  const validateMs = performance.now() - validateStart;
  const started = performance.now();
  let done = 0;
  for (;;) {
    const claimed = await store.claim(now);
    if (!('batchId' in claimed)) break;
    await store.settle(claimed.batchId, claimed.index, { kind: 'answered', statusCode: 200, requestId: `req_${done}`, body: '{}' });
    await store.activity(claimed.batchId);
    done += 1;
  }
  if (done !== n) throw new Error(`claimed ${done} of ${n} lines`);
  await store.move(id, ['in_progress'], 'finalizing', now);
  return [validateMs, n / ((performance.now() - started) / 1000)];
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function main(): Promise<void> {
  for (const [name, open] of [['sqlite', sqliteBackend], ['postgres', postgresBackend]] as const) {
    const backend = await open();
    try {
      await round(backend.store, 50); // warm-up
      const results: [number, number][] = [];
      for (let i = 0; i < ROUNDS; i++) results.push(await round(backend.store, LINES));
      const out = { backend: name, lines: LINES, rounds: ROUNDS, validate_ms: Number(median(results.map((r) => r[0])).toFixed(1)), lines_per_s: Math.round(median(results.map((r) => r[1]))) };
      process.stdout.write(`${JSON.stringify(out)}\n`);
    } finally {
      await backend.close();
    }
  }
}

await main();
