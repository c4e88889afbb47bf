/**
 * The PostgreSQL usage ledger's write rate at saturation (issue 12): batches of BATCH rows, each one
 * journal segment stored with its marker in one transaction (the writer thread's path,
 * store/postgres/usage-writer.ts), as fast as one connection takes them, for SECONDS. Run against the
 * machine's PostgreSQL (127.0.0.1:5432, trust auth; SWITCHBOARD_BENCH_PG_URL to change it) in a fresh
 * database it drops afterwards:
 *
 *   node dist/bench/pg-ledger.js [batch] [seconds]
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createPgUsageWriter } from '../src/store/postgres/usage-writer.js';
import { ledgerBatch } from './ledger-rows.js';

const ADMIN_URL = process.env.SWITCHBOARD_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const BATCH = Number(process.argv[2] ?? 512);
const SECONDS = Number(process.argv[3] ?? 10);

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  const name = `sbbench_${randomBytes(6).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const writer = createPgUsageWriter(url.toString());
  try {
    // Warm-up: opens and migrates the database, prepares the statement.
    await writer.store(ledgerBatch(BATCH, 0), 'seg-warmup', []);
    let rows = 0;
    let batches = 0;
    const started = performance.now();
    const until = started + SECONDS * 1000;
    while (performance.now() < until) {
      await writer.store(ledgerBatch(BATCH, Date.now()), `seg-bench-${batches}`, []);
      rows += BATCH;
      batches += 1;
    }
    const seconds = (performance.now() - started) / 1000;
    const result = { batch: BATCH, batches, rows, seconds: Number(seconds.toFixed(2)), rows_per_s: Math.round(rows / seconds), ms_per_batch: Number(((seconds * 1000) / batches).toFixed(2)) };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await writer.close([]);
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}

await main();
