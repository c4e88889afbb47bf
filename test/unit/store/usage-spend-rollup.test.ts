/**
 * The budgets' spend comes from the hourly rollup that a trigger keeps beside usage_events (migration 014),
 * no longer from a scan of the ledger: it must equal that scan, per endpoint and per workspace, for the
 * hour, the day and in total, in tokens and nano-dollars, including rows that were in the ledger before
 * the migration (rolled up once by the migration itself).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { budgetWindowStarts } from '../../../src/core/limits/budget-caps.js';
import { createBudgetsRepo } from '../../../src/store/budgets-repo.js';
import { openDatabase, type Db } from '../../../src/store/db.js';
import { migrationUsageSpendRollup } from '../../../src/store/migrations/014-usage-spend-rollup.js';
import { createSqliteRunner } from '../../../src/store/sql/sqlite-runner.js';
import { insertRows } from '../../../src/store/usage/usage-ledger-writes.js';
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
    db.exec('DROP TRIGGER usage_events_spend_rollup; DROP TABLE usage_spend_hourly;');
    db.exec(migrationUsageSpendRollup);
    insert(rows(400, 600));
    expect(scan(db, 'endpoint_id')).toHaveLength(6);
    expect(fromRollup(db, 'endpoint')).toEqual(scan(db, 'endpoint_id'));
    expect(fromRollup(db, 'workspace')).toEqual(scan(db, 'workspace_id'));
    db.close();
  });
});
