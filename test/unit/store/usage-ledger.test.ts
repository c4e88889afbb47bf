/**
 * The store's writer thread stores every row of a batch, column for column, whether the row goes
 * through a multi-row statement or the single-row tail. The writer is a worker thread, which runs
 * JavaScript: so this imports the compiled ledger from dist/ (built by the global setup).
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/store/db.js';
import type { LedgerRow } from '../../../src/store/usage-ledger.js';
import { createStoreWriter } from '../../../dist/src/store/store-writer.js';
import { createUsageJournal, journalDirOf, type UsageJournal } from '../../../dist/src/store/usage-journal.js';
import { createUsageLedger } from '../../../dist/src/store/usage-ledger.js';

const dir = mkdtempSync(join(tmpdir(), 'usage-ledger-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function row(i: number): LedgerRow {
  return {
    requestId: `chatcmpl-${i}`,
    projectId: `proj_${i % 3}`,
    workspaceId: i % 2 === 0 ? null : `ws_${i}`,
    endpointId: `ep-${i % 5}`,
    keyId: `key_${i % 7}`,
    route: i % 4 === 0 ? 'router' : 'chat',
    promptTokens: i * 3,
    completionTokens: i * 5 + 1,
    cachedTokens: i % 3,
    reasoningTokens: i % 2 === 0 ? null : i,
    serviceTier: i % 2 === 0 ? 'default' : 'flex',
    tierMultiplier: i % 2 === 0 ? 1 : 0.5,
    status: i % 9 === 0 ? 'aborted' : 'completed',
    usageSource: i % 6 === 0 ? 'estimated' : 'upstream',
    latencyMs: i + 0.25,
    createdAt: 1_700_000_000_000 + i,
    model: i % 4 === 0 ? null : `model-${i % 2}`,
    costNanos: i % 5 === 0 ? null : i * 1_234_567,
  };
}


/** The ledger's rows as stored, in LedgerRow form. */
function storedRows(path: string): LedgerRow[] {
  const db = new Database(path, { readonly: true });
  const stored = db.prepare('SELECT * FROM usage_events ORDER BY id').all() as Record<string, unknown>[];
  db.close();
  return stored.map((s) => ({
    requestId: s['request_id'],
    projectId: s['project_id'],
    workspaceId: s['workspace_id'],
    endpointId: s['endpoint_id'],
    keyId: s['key_id'],
    route: s['route'],
    promptTokens: s['prompt_tokens'],
    completionTokens: s['completion_tokens'],
    cachedTokens: s['cached_tokens'],
    reasoningTokens: s['reasoning_tokens'],
    serviceTier: s['service_tier'],
    tierMultiplier: s['tier_multiplier'],
    status: s['status'],
    usageSource: s['usage_source'],
    latencyMs: s['latency_ms'],
    createdAt: s['created_at'],
    model: s['model'],
    costNanos: s['cost_nanos'],
  })) as LedgerRow[];
}

/** Creates the store at `path`, records `count` rows through a ledger on it at `path` (with `journal`, or none); returns them and the errors reported. */
async function recordThrough(path: string, count: number, journalOf: (errors: string[]) => UsageJournal | null): Promise<{ rows: LedgerRow[]; errors: string[] }> {
  openDatabase(path).close();
  const errors: string[] = [];
  const journal = journalOf(errors);
  const ledger = createUsageLedger(createStoreWriter({ path, journalDir: journal?.dir ?? null }, 1), journal, (message) => errors.push(message));
  const rows = Array.from({ length: count }, (_, i) => row(i));
  for (const r of rows) ledger.record(r);
  await ledger.close();
  return { rows, errors };
}

describe('the usage ledger', () => {
  it('stores every recorded row with every column as recorded (70 rows: two full statements and a tail)', async () => {
    const path = join(dir, 'ledger.db');
    const { rows, errors } = await recordThrough(path, 70, () => null);
    expect(errors).toEqual([]);
    expect(storedRows(path)).toEqual(rows);
  });

  it('with the journal on, the writer reads each batch from its segment, stores it once and removes the file', async () => {
    const path = join(dir, 'journaled.db');
    const { rows, errors } = await recordThrough(path, 70, (reported) => createUsageJournal(path, 'inst_0a0a', (message) => reported.push(message)));
    expect(errors).toEqual([]);
    expect(storedRows(path)).toEqual(rows);
    expect(readdirSync(journalDirOf(path))).toEqual([]);
  });

  it('hands the writer the rows themselves once an append failed: the segment misses some of them', async () => {
    const path = join(dir, 'broken-journal.db');
    const { rows, errors } = await recordThrough(path, 40, (reported) => {
      const real = createUsageJournal(path, 'inst_0b0b', (message) => reported.push(message));
      let appended = 0;
      // The first ten rows reach the file, then the disk "fills": the journal says so through `intact`.
      return {
        dir: real.dir,
        get intact() {
          return appended < 10;
        },
        append(r) {
          if (appended < 10) real.append(r);
          appended += 1;
        },
        get holding() {
          return real.holding;
        },
        after: (send: () => void) => real.after(send),
        settle: () => real.settle(),
        cut: () => real.cut(),
      };
    });
    expect(errors).toEqual([]);
    expect(storedRows(path)).toEqual(rows);
  });
});
