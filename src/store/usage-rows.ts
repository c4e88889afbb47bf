/**
 * The budget rows both usage stores read (SQLite: budgets-repo.ts, PostgreSQL: postgres/usage-store.ts),
 * the same columns in both schemas, one mapping to the port's records.
 */
import type { BudgetLevel } from '../core/limits/budgets.js';
import type { SpendRow, StoredBudget } from '../core/store/usage-store.js';

export interface BudgetRow {
  project_id: string;
  level: BudgetLevel;
  target_id: string;
  hourly_tokens: number | null;
  daily_tokens: number | null;
  hard_cap_tokens: number | null;
  hourly_cents: number | null;
  daily_cents: number | null;
  hard_cap_cents: number | null;
}

/** Spend of one endpoint or workspace since the start of the hour and the day, and in total (spend queries). */
export interface SpendQueryRow {
  project_id: string;
  target_id: string;
  hourly: number;
  daily: number;
  total: number;
  hourly_nanos: number;
  daily_nanos: number;
  total_nanos: number;
}

export const budgetOf = (r: BudgetRow): StoredBudget => ({
  projectId: r.project_id,
  level: r.level,
  targetId: r.target_id,
  caps: {
    hourlyTokens: r.hourly_tokens,
    dailyTokens: r.daily_tokens,
    hardCapTokens: r.hard_cap_tokens,
    hourlyCents: r.hourly_cents,
    dailyCents: r.daily_cents,
    hardCapCents: r.hard_cap_cents,
  },
});

export const spendOf = (r: SpendQueryRow): SpendRow => ({
  projectId: r.project_id,
  targetId: r.target_id,
  hourly: r.hourly,
  daily: r.daily,
  total: r.total,
  nanos: { hourly: r.hourly_nanos, daily: r.daily_nanos, total: r.total_nanos },
});
