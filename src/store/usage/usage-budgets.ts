/**
 * The budget caps set through the management API and the spend they are rebuilt from at start, written
 * once for both backends. Every change of caps that changed a row sends the change notice `budgets` in its
 * transaction (PostgreSQL: every replica reloads them, wiring/limits.ts; SQLite: nothing, the processes
 * sharing the file read the table).
 *
 * Spend is read from the hourly rollup (usage-tables.ts), never the ledger: its size is hours x targets,
 * not turns. It is counted as the limiter counts tokens (prompt + completion - cached, never below zero per
 * row), and an unpriced turn costs nothing against a money budget: both backends' rollup triggers do both.
 */
import { sql } from 'kysely';
import type { BudgetLevel } from '../../core/limits/budget-caps.js';
import type { SpendRow, StoredBudget } from '../../core/store/usage-store.js';
import type { ChangeNotices } from '../sql/change-notices.js';
import { sqlFor } from '../sql/sql-builder.js';
import { prepared, preparedRow, rows, run, type SqlDialect, type SqlProgram } from '../sql/sql-program.js';
import type { UsageTables } from './usage-tables.js';

export const BUDGETS_TOPIC = 'budgets';

type BudgetRow = UsageTables['budgets'];

const budgetOf = (r: BudgetRow): StoredBudget => ({
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

export interface UsageBudgets {
  list(): SqlProgram<StoredBudget[]>;
  put(budget: StoredBudget, now: number): SqlProgram<void>;
  /** False when there was no such budget. */
  remove(projectId: string, level: BudgetLevel, targetId: string): SqlProgram<boolean>;
  spend(level: BudgetLevel, since: { hourStart: number; dayStart: number }): SqlProgram<SpendRow[]>;
}

export function usageBudgets(dialect: SqlDialect, notices: Pick<ChangeNotices, 'notify'>): UsageBudgets {
  const { db } = sqlFor<UsageTables>(dialect);
  // In key order on both backends (SQLite's table scan had no order to promise).
  const list = prepared(() => db.selectFrom('budgets').selectAll().orderBy('project_id').orderBy('level').orderBy('target_id'));
  const upsert = preparedRow((row: BudgetRow) =>
    db
      .insertInto('budgets')
      .values(row)
      .onConflict((oc) =>
        oc.columns(['project_id', 'level', 'target_id']).doUpdateSet((eb) => ({
          hourly_tokens: eb.ref('excluded.hourly_tokens'),
          daily_tokens: eb.ref('excluded.daily_tokens'),
          hard_cap_tokens: eb.ref('excluded.hard_cap_tokens'),
          hourly_cents: eb.ref('excluded.hourly_cents'),
          daily_cents: eb.ref('excluded.daily_cents'),
          hard_cap_cents: eb.ref('excluded.hard_cap_cents'),
          updated_at: eb.ref('excluded.updated_at'),
        })),
      ),
  );
  const remove = prepared((projectId: string, level: BudgetLevel, targetId: string) =>
    db.deleteFrom('budgets').where('project_id', '=', projectId).where('level', '=', level).where('target_id', '=', targetId),
  );
  const spend = (column: 'endpoint_id' | 'workspace_id') =>
    prepared((hourStart: number, dayStart: number) => {
      const since = (start: number, value: 'tokens' | 'nanos') => sql<number>`SUM(CASE WHEN hour_start >= ${start} THEN ${sql.ref(value)} ELSE 0 END)`;
      return db
        .selectFrom('usage_spend_hourly')
        .select([
          'project_id',
          sql.ref<string>(column).as('target_id'),
          since(hourStart, 'tokens').as('hourly'),
          since(dayStart, 'tokens').as('daily'),
          sql<number>`SUM(tokens)`.as('total'),
          since(hourStart, 'nanos').as('hourly_nanos'),
          since(dayStart, 'nanos').as('daily_nanos'),
          sql<number>`SUM(nanos)`.as('total_nanos'),
        ])
        .where(column, '<>', '')
        .groupBy(['project_id', column]);
    });
  const spendOf = { endpoint: spend('endpoint_id'), workspace: spend('workspace_id') };

  return {
    *list() {
      return (yield* rows(list())).map(budgetOf);
    },
    *put(b, now) {
      const { caps } = b;
      yield* run(
        upsert({
          project_id: b.projectId,
          level: b.level,
          target_id: b.targetId,
          hourly_tokens: caps.hourlyTokens,
          daily_tokens: caps.dailyTokens,
          hard_cap_tokens: caps.hardCapTokens,
          hourly_cents: caps.hourlyCents ?? null,
          daily_cents: caps.dailyCents ?? null,
          hard_cap_cents: caps.hardCapCents ?? null,
          updated_at: now,
        }),
      );
      yield* notices.notify(BUDGETS_TOPIC);
    },
    *remove(projectId, level, targetId) {
      if ((yield* run(remove(projectId, level, targetId))) === 0) return false;
      yield* notices.notify(BUDGETS_TOPIC);
      return true;
    },
    *spend(level, since) {
      const found = yield* rows(spendOf[level](since.hourStart, since.dayStart));
      return found.map((r) => ({
        projectId: r.project_id,
        targetId: r.target_id,
        hourly: Number(r.hourly),
        daily: Number(r.daily),
        total: Number(r.total),
        nanos: { hourly: Number(r.hourly_nanos), daily: Number(r.daily_nanos), total: Number(r.total_nanos) },
      }));
    },
  };
}
