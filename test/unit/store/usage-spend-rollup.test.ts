/**
 * The budgets' spend comes from the hourly rollup kept beside usage_events (migration 014; since migration
 * 019 by the ledger's insert, a batch at a time, instead of a trigger a row at a time), no longer from a
 * scan of the ledger: it must equal that scan, per endpoint and per workspace, for the hour, the day and in
 * total, in tokens and nano-dollars, including rows that were in the ledger before migration 014 (rolled
 * up once by the migration itself) and rows rolled up by its trigger before migration 019.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { budgetWindowStarts } from '../../../src/core/limits/budget-caps.js';
import { createBudgetsRepo } from '../../../src/store/budgets-repo.js';
import { openDatabase, type Db } from '../../../src/store/db.js';
import { migrationUsageSpendRollup } from '../../../src/store/migrations/014-usage-spend-rollup.js';
import { migrationUsageRollupByBatch } from '../../../src/store/migrations/019-usage-rollup-by-batch.js';
import { createSqliteRunner } from '../../../src/store/sql/sqlite-runner.js';
import { insertRows } from '../../../src/store/usage/usage-ledger-writes.js';
import { LEDGER_COLUMNS, USAGE_COLUMNS } from '../../../src/store/usage/usage-tables.js';
import type { LedgerRow } from '../../../src/store/usage-ledger.js';

const dir = mkdtempSync(join(tmpdir(), 'spend-rollup-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const NOW = Date.UTC(2026, 10, 23, 15, 40);
const HOUR = 3_600_000;

/** Deterministic rows over three days: several projects, endpoints and workspaces, cached > prompt, unpriced turns. */
function rows(from: number, count: number): LedgerRow[] {
  return Array.from({ length: count }, (_, k) => {
    const i = from + k;
    return {
      requestId: `r-${i}`, projectId: `proj_${i % 2}`, workspaceId: i % 3 === 0 ? null : `ws_${i % 4}`, endpointId: `ep-${i % 3}`,
      keyId: 'key_1', route: 'chat', promptTokens: (i * 7) % 50, completionTokens: (i * 11) % 30, cachedTokens: i % 10 === 0 ? 90 : i % 5,
      reasoningTokens: null, serviceTier: 'default', tierMultiplier: 1, status: 'completed', usageSource: 'upstream', latencyMs: 1,
      createdAt: NOW - ((i * 7919) % (72 * HOUR)), model: 'm', costNanos: i % 4 === 0 ? null : i * 1000,
    };
  });
}

/** The rows alone, as a build before migration 019 inserted them (its trigger kept the rollup). */
function insertAsBefore019(db: Db, batch: readonly LedgerRow[]): void {
  const insert = db.prepare(`INSERT INTO usage_events (${Object.values(LEDGER_COLUMNS).join(', ')}) VALUES (${USAGE_COLUMNS.map(() => '?').join(', ')})`);
  for (const row of batch) insert.run(...USAGE_COLUMNS.map((field) => row[field] ?? null));
}

/** What the budgets read before the rollup: one scan of the ledger. */
function scan(db: Db, column: 'endpoint_id' | 'workspace_id') {
  const { hourStart, dayStart } = budgetWindowStarts(NOW);
  const tokens = 'MAX(prompt_tokens + completion_tokens - cached_tokens, 0)';
  const nanos = 'COALESCE(cost_nanos, 0)';
  return db.prepare(`
    SELECT project_id AS projectId, ${column} AS targetId,
      SUM(CASE WHEN created_at >= ${hourStart} THEN ${tokens} ELSE 0 END) AS hourly, SUM(CASE WHEN created_at >= ${dayStart} THEN ${tokens} ELSE 0 END) AS daily,
      SUM(${tokens}) AS total, SUM(CASE WHEN created_at >= ${hourStart} THEN ${nanos} ELSE 0 END) AS hn,
      SUM(CASE WHEN created_at >= ${dayStart} THEN ${nanos} ELSE 0 END) AS dn, SUM(${nanos}) AS tn
    FROM usage_events WHERE ${column} IS NOT NULL GROUP BY project_id, ${column} ORDER BY 1, 2`).all() as Record<string, unknown>[];
}

function fromRollup(db: Db, level: 'endpoint' | 'workspace') {
  return createBudgetsRepo(db)
    .spend(level, budgetWindowStarts(NOW))
    .map((r) => ({ projectId: r.projectId, targetId: r.targetId, hourly: r.hourly, daily: r.daily, total: r.total, hn: r.nanos.hourly, dn: r.nanos.daily, tn: r.nanos.total }))
    .sort((a, b) => (a.projectId + a.targetId < b.projectId + b.targetId ? -1 : 1));
}

describe('the hourly spend rollup', () => {
  it('equals a full scan of the ledger, rows written before the migration included', () => {
    const db = openDatabase(join(dir, 'rollup.db'));
    const runner = createSqliteRunner(db);
    const insert = (batch: readonly LedgerRow[]): void => runner.writeSync(insertRows(batch));
    insert(rows(0, 400));
    // As a store from before migration 014: no rollup yet, the 400 rows already in the ledger.
    db.exec('DROP TABLE usage_spend_hourly;');
    db.exec(migrationUsageSpendRollup);
    // Migration 014's trigger rolls up these 300 rows one by one, as stores between 014 and 019 did.
    insertAsBefore019(db, rows(400, 300));
    db.exec(migrationUsageRollupByBatch);
    // From 019 on, the insert program adds each batch up (with the trigger still there, they would count twice).
    insert(rows(700, 300));
    expect(scan(db, 'endpoint_id')).toHaveLength(6);
    expect(fromRollup(db, 'endpoint')).toEqual(scan(db, 'endpoint_id'));
    expect(fromRollup(db, 'workspace')).toEqual(scan(db, 'workspace_id'));
    db.close();
  });
});
