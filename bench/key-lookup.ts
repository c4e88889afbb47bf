/**
 * The SQLite key lookup of the request path (store/catalog/sqlite-catalog.ts findCredential): what the
 * in-memory catalog pays on a key's first use, and on every unknown key (misses are not cached). A file
 * store with 50 config keys; rounds of 200,000 lookups of known values (each mapped to its credential) and
 * of an unknown one; the minimum and the median per lookup over the rounds (a shared machine's noise moves
 * the median, rarely the minimum).
 *
 *   npx tsc -p tsconfig.json && node dist/bench/key-lookup.js [rounds]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../src/config.js';
import { hashKeyValue } from '../src/core/auth/key-token.js';
import { createSqliteCatalog } from '../src/store/catalog/sqlite-catalog.js';
import { openDatabase } from '../src/store/db.js';
import { median } from './limiter-cost.js';

const LOOKUPS = 200_000;
const KEYS = 50;

function perLookupUs(lookup: (i: number) => unknown): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < LOOKUPS; i += 1) lookup(i);
  return Number(process.hrtime.bigint() - start) / 1e3 / LOOKUPS;
}

function main(rounds: number): void {
  const dir = mkdtempSync(join(tmpdir(), 'sb-key-lookup-'));
  const db = openDatabase(join(dir, 'store.db'));
  try {
    const values = Array.from({ length: KEYS }, (_, i) => `svc_bench_${String(i).padStart(43, 'A')}`);
    const catalog = createSqliteCatalog(db);
    catalog.syncConfig(parseConfig({ projects: [{ id: 'proj_bench', slug: 'bench', workspaces: [{ id: 'ws_0a', name: 'Main' }], default_workspace: 'ws_0a', keys: values.map((value) => ({ value })) }] }), 1);
    const hashes = values.map(hashKeyValue);
    const unknown = hashKeyValue('svc_bench_unknown');
    const hit = (i: number) => catalog.findCredential(hashes[i % KEYS] ?? unknown);
    const miss = () => catalog.findCredential(unknown);
    perLookupUs(hit);
    const hits: number[] = [];
    const misses: number[] = [];
    for (let r = 0; r < rounds; r += 1) {
      hits.push(perLookupUs(hit));
      misses.push(perLookupUs(miss));
    }
    const line = (label: string, xs: number[]) => `${label}: min ${Math.min(...xs).toFixed(2)} us, median ${(median(xs) ?? 0).toFixed(2)} us per lookup (${rounds} rounds of ${LOOKUPS})`;
    console.log(line('known key  ', hits));
    console.log(line('unknown key', misses));
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main(Number(process.argv[2] ?? 5));
