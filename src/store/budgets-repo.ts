/**
 * Budgets set through the management API (token and money caps), and the spend the usage ledger already
 * holds, on SQLite and synchronously, for the callers that are (the bus reads the caps when a sibling on
 * the same file changed them): the programs of usage/usage-budgets.ts, shared with both usage stores.
 * Restoring the budgets at start, from a usage store of either kind, is here too.
 */
import type { BudgetConfig, Config } from '../config.js';
import { budgetWindowStarts, type BudgetCaps, type BudgetLevel } from '../core/limits/budget-caps.js';
import type { Budgets } from '../core/limits/budgets.js';
import type { SpendRow, StoredBudget, UsageStore } from '../core/store/usage-store.js';
import type { Db } from './db.js';
import { sqliteChangeNotices } from './sql/change-notices.js';
import { createSqliteRunner } from './sql/sqlite-runner.js';
import { usageBudgets } from './usage/usage-budgets.js';

export type { SpendRow, StoredBudget } from '../core/store/usage-store.js';

export function createBudgetsRepo(db: Db) {
  const runner = createSqliteRunner(db);
  const budgets = usageBudgets('sqlite', sqliteChangeNotices);
  return {
    list: (): StoredBudget[] => runner.readSync(budgets.list()),
    put: (b: StoredBudget, now: number): void => runner.writeSync(budgets.put(b, now)),
    remove: (projectId: string, level: BudgetLevel, targetId: string): boolean => runner.writeSync(budgets.remove(projectId, level, targetId)),
    /** Spend per endpoint or workspace since the start of the hour and day, and in total, in tokens and money (one scan). */
    spend: (level: BudgetLevel, since: { hourStart: number; dayStart: number }): SpendRow[] => runner.readSync(budgets.spend(level, since)),
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

/**
 * Budget spend raised to the usage ledger's where the ledger holds more: another replica's turns whose
 * charge this process never heard (docs/decisions.md "Budget spend follows the ledger"). Never lowers it.
 */
export async function raiseBudgetSpendFrom(store: Pick<UsageStore, 'spend'>, budgets: Budgets, now: number): Promise<void> {
  const since = budgetWindowStarts(now);
  const [endpoint, workspace] = await Promise.all([store.spend('endpoint', since), store.spend('workspace', since)]);
  for (const [level, rows] of [['endpoint', endpoint], ['workspace', workspace]] as const) {
    for (const row of rows) budgets.raiseSpend(level, row.projectId, row.targetId, row, now, row.nanos);
  }
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
