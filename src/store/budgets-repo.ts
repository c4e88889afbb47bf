/**
 * Budgets set through the management API (token and money caps), and the spend the usage ledger already
 * holds, in tokens and nano-dollars (read once at start to rebuild the in-memory budget state; never on the
 * request path).
 */
import type { BudgetConfig, Config } from '../config.js';
import { budgetWindowStarts, type BudgetCaps, type BudgetLevel, type Budgets } from '../core/limits/budgets.js';
import type { SpendRow, StoredBudget, UsageStore } from '../core/store/usage-store.js';
import type { Db } from './db.js';
import { budgetOf, spendOf, type BudgetRow, type SpendQueryRow } from './usage-rows.js';

export type { SpendRow, StoredBudget } from '../core/store/usage-store.js';

/*
 * Spend is counted as the limiter counts tokens (prompt + completion - cached, never below zero per row),
 * and an unpriced turn (cost_nanos NULL) costs nothing against a money budget: the rollup's trigger does
 * both (migration 014).
 */

export function createBudgetsRepo(db: Db) {
  const all = db.prepare<[], BudgetRow>('SELECT * FROM budgets');
  const upsert = db.prepare(`
    INSERT INTO budgets (project_id, level, target_id, hourly_tokens, daily_tokens, hard_cap_tokens, hourly_cents, daily_cents, hard_cap_cents, updated_at)
    VALUES (@projectId, @level, @targetId, @hourly, @daily, @hardCap, @hourlyCents, @dailyCents, @hardCapCents, @now)
    ON CONFLICT (project_id, level, target_id) DO UPDATE SET hourly_tokens = excluded.hourly_tokens,
      daily_tokens = excluded.daily_tokens, hard_cap_tokens = excluded.hard_cap_tokens, hourly_cents = excluded.hourly_cents,
      daily_cents = excluded.daily_cents, hard_cap_cents = excluded.hard_cap_cents, updated_at = excluded.updated_at`);
  const remove = db.prepare('DELETE FROM budgets WHERE project_id = ? AND level = ? AND target_id = ?');
  // From the hourly rollup (migration 014), not the ledger: its size is hours x targets, not turns.
  const spendQuery = (column: 'endpoint_id' | 'workspace_id') =>
    db.prepare<{ hourStart: number; dayStart: number }, SpendQueryRow>(`
      SELECT project_id, ${column} AS target_id,
        SUM(CASE WHEN hour_start >= @hourStart THEN tokens ELSE 0 END) AS hourly,
        SUM(CASE WHEN hour_start >= @dayStart THEN tokens ELSE 0 END) AS daily,
        SUM(tokens) AS total,
        SUM(CASE WHEN hour_start >= @hourStart THEN nanos ELSE 0 END) AS hourly_nanos,
        SUM(CASE WHEN hour_start >= @dayStart THEN nanos ELSE 0 END) AS daily_nanos,
        SUM(nanos) AS total_nanos
      FROM usage_spend_hourly WHERE ${column} != '' GROUP BY project_id, ${column}`);
  const byEndpoint = spendQuery('endpoint_id');
  const byWorkspace = spendQuery('workspace_id');

  return {
    list: (): StoredBudget[] =>
      all.all().map(budgetOf),
    put(b: StoredBudget, now: number): void {
      upsert.run({
        projectId: b.projectId,
        level: b.level,
        targetId: b.targetId,
        hourly: b.caps.hourlyTokens,
        daily: b.caps.dailyTokens,
        hardCap: b.caps.hardCapTokens,
        hourlyCents: b.caps.hourlyCents ?? null,
        dailyCents: b.caps.dailyCents ?? null,
        hardCapCents: b.caps.hardCapCents ?? null,
        now,
      });
    },
    remove(projectId: string, level: BudgetLevel, targetId: string): boolean {
      return remove.run(projectId, level, targetId).changes > 0;
    },
    /** Spend per endpoint or workspace since the start of the hour and day, and in total, in tokens and money (one scan). */
    spend(level: BudgetLevel, since: { hourStart: number; dayStart: number }): SpendRow[] {
      const rows = (level === 'endpoint' ? byEndpoint : byWorkspace).all(since);
      return rows.map(spendOf);
    },
  };
}

export type BudgetsRepo = ReturnType<typeof createBudgetsRepo>;

const capsOf = (b: BudgetConfig): BudgetCaps => ({
  hourlyTokens: b.hourly_tokens ?? null,
  dailyTokens: b.daily_tokens ?? null,
  hardCapTokens: b.hard_cap_tokens ?? null,
  hourlyCents: b.hourly_cents ?? null,
  dailyCents: b.daily_cents ?? null,
  hardCapCents: b.hard_cap_cents ?? null,
});

/**
 * At start: caps from the config file, overrides from the management API, and spend rebuilt from the
 * usage ledger's hourly rollup (migration 014; docs/decisions.md "Budgets").
 */
export function restoreBudgets(repo: BudgetsRepo, config: Config, budgets: Budgets, now: number): void {
  const since = budgetWindowStarts(now);
  loadBudgets(config, budgets, now, repo.list(), { endpoint: repo.spend('endpoint', since), workspace: repo.spend('workspace', since) });
}

/**
 * The same from a usage store of any kind (PostgreSQL's rollup, issue 12). Returns the stored caps, which
 * the caller keeps for the bus (coordination/bus-wiring.ts reads them synchronously).
 */
export async function restoreBudgetsFrom(store: Pick<UsageStore, 'listBudgets' | 'spend'>, config: Config, budgets: Budgets, now: number): Promise<StoredBudget[]> {
  const since = budgetWindowStarts(now);
  const [stored, endpoint, workspace] = await Promise.all([store.listBudgets(), store.spend('endpoint', since), store.spend('workspace', since)]);
  loadBudgets(config, budgets, now, stored, { endpoint, workspace });
  return stored;
}

function loadBudgets(config: Config, budgets: Budgets, now: number, stored: readonly StoredBudget[], spend: Record<BudgetLevel, readonly SpendRow[]>): void {
  for (const p of config.projects) {
    for (const e of p.endpoints) if (e.budget) budgets.setConfigCaps('endpoint', p.id, e.id, capsOf(e.budget));
    for (const w of p.workspaces) if (w.budget) budgets.setConfigCaps('workspace', p.id, w.id, capsOf(w.budget));
  }
  for (const b of stored) budgets.setApiCaps(b.level, b.projectId, b.targetId, b.caps);
  for (const level of ['endpoint', 'workspace'] as const) {
    for (const row of spend[level]) budgets.loadSpend(level, row.projectId, row.targetId, row, now, row.nanos);
  }
}
