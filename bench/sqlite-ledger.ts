/**
 * The SQLite usage ledger's write rate (issue 33): SEGMENTS journal segments of BATCH rows, each stored with
 * its marker in one IMMEDIATE transaction through the usage store's storeSegment (the program the writer
 * thread and the journal replay run, store/usage/usage-ledger-writes.ts), back to back, on a fresh file
 * with the writer thread's synchronous=NORMAL; the spend rollup's trigger included.
 *
 *   node dist/bench/sqlite-ledger.js [batch] [segments]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/store/db.js';
import { createSqliteUsageStore } from '../src/store/sqlite/usage-store.js';
import { ledgerBatch } from './ledger-rows.js';

const BATCH = Number(process.argv[2] ?? 512);
const SEGMENTS = Number(process.argv[3] ?? 100);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sqlite-ledger-'));
  const db = openDatabase(join(dir, 'ledger.db'), 'NORMAL');
  const store = createSqliteUsageStore(db);
  try {
    // Warm-up: prepares the statements.
    await store.storeSegment('seg-warmup', ledgerBatch(BATCH, 0));
    const batches = Array.from({ length: SEGMENTS }, (_, b) => ledgerBatch(BATCH, 1_000_000 + b * BATCH));
    const cpu = process.cpuUsage();
    const started = performance.now();
    for (const [b, rows] of batches.entries()) await store.storeSegment(`seg-bench-${b}`, rows);
    const seconds = (performance.now() - started) / 1000;
    // CPU time as well: on a shared machine the wall clock mostly measures the neighbours.
    const { user, system } = process.cpuUsage(cpu);
    const rows = BATCH * SEGMENTS;
    const result = { batch: BATCH, segments: SEGMENTS, rows, seconds: Number(seconds.toFixed(3)), rows_per_s: Math.round(rows / seconds), ms_per_batch: Number(((seconds * 1000) / SEGMENTS).toFixed(2)), cpu_us_per_row: Number(((user + system) / rows).toFixed(2)) };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
