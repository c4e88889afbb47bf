/**
 * Usage and spend totals from the ledger (usage_events) over a time range of one project, grouped by UTC
 * day, key, endpoint, model or workspace, in pages: the one query behind the management usage API (through
 * the reader thread, usage-reader.ts) and `switchboard usage` (cli-usage.ts).
 *
 * Cost on a big ledger: the range of one project is read through usage_events_project_time (migration 002;
 * a test checks the plan), and grouping then costs one pass over the rows of that range, whatever the page:
 * a page is the groups after the cursor, in group order. Sums are SQLite integer sums, read as BigInt, so
 * the cost total is exact however large it grows.
 */
import type Database from 'better-sqlite3';
import { DAY_MS, type UsageGroupBy, type UsagePage, type UsageQuery, type UsageTotals } from '../core/store/usage-store.js';
import type { Db } from './db.js';

export { DAY_MS, USAGE_GROUPS, type UsageGroupBy, type UsagePage, type UsageQuery, type UsageTotals } from '../core/store/usage-store.js';

/** The grouped column, and whether it can be NULL (null groups sort last). */
const GROUP_COLUMNS: Record<UsageGroupBy, { readonly expr: string; readonly nullable: boolean }> = {
  // created_at is an integer: this is integer division, the UTC day number.
  day: { expr: `created_at / ${DAY_MS}`, nullable: false },
  key: { expr: 'key_id', nullable: false },
  endpoint: { expr: 'endpoint_id', nullable: false },
  model: { expr: 'model', nullable: true },
  workspace: { expr: 'workspace_id', nullable: true },
};

interface TotalsRow {
  grp: string | bigint | null;
  requests: bigint;
  prompt_tokens: bigint;
  completion_tokens: bigint;
  cached_tokens: bigint;
  reasoning_tokens: bigint;
  cost_nanos: bigint | null;
  unpriced: bigint;
}

interface Params {
  projectId: string;
  start: number;
  end: number;
  after: string | null;
  limit: number;
}

function totalsSql(groupBy: UsageGroupBy, withCursor: boolean): string {
  const { expr, nullable } = GROUP_COLUMNS[groupBy];
  const cursor = !withCursor ? '' : nullable ? `AND (${expr} > @after OR ${expr} IS NULL)` : `AND ${expr} > @after`;
  return `
    SELECT ${expr} AS grp, COUNT(*) AS requests,
      SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens,
      SUM(cached_tokens) AS cached_tokens, COALESCE(SUM(reasoning_tokens), 0) AS reasoning_tokens,
      SUM(cost_nanos) AS cost_nanos, COUNT(*) - COUNT(cost_nanos) AS unpriced
    FROM usage_events
    WHERE project_id = @projectId AND created_at >= @start AND created_at < @end ${cursor}
    GROUP BY grp
    ORDER BY ${nullable ? 'grp IS NULL, ' : ''}grp
    LIMIT @limit`;
}

export interface UsageTotalsReader {
  page(q: UsageQuery): UsagePage;
  /** The SQL of a page, for checking its query plan. */
  sql(groupBy: UsageGroupBy, withCursor: boolean): string;
}

export function createUsageTotals(db: Db): UsageTotalsReader {
  const statements = new Map<string, Database.Statement<Params, TotalsRow>>();
  const statement = (groupBy: UsageGroupBy, withCursor: boolean): Database.Statement<Params, TotalsRow> => {
    const id = `${groupBy}/${withCursor}`;
    let s = statements.get(id);
    if (!s) {
      s = db.prepare<Params, TotalsRow>(totalsSql(groupBy, withCursor));
      // BigInt for every integer: the cost sum must stay exact past 2^53 nano-dollars ($9M).
      s.safeIntegers(true);
      statements.set(id, s);
    }
    return s;
  };

  return {
    sql: totalsSql,
    page(q) {
      let { start } = q;
      let after: string | null = null;
      if (q.groupBy === 'day') {
        // The day cursor becomes the range: the next page starts with the day after it.
        if (q.after !== null) start = Math.max(start, (Math.floor(Number(q.after) / DAY_MS) + 1) * DAY_MS);
      } else if (q.after !== null) {
        after = String(q.after);
      }
      // One row more than the page: whether there is a next page, without counting the groups.
      const limit = q.limit === null ? -1 : q.limit + 1;
      const rows = statement(q.groupBy, after !== null).all({ projectId: q.projectId, start, end: q.end, after, limit });
      const hasMore = q.limit !== null && rows.length > q.limit;
      const items = (hasMore ? rows.slice(0, q.limit ?? 0) : rows).map((r) => toTotals(r, q.groupBy));
      return { items, hasMore };
    },
  };
}

function toTotals(r: TotalsRow, groupBy: UsageGroupBy): UsageTotals {
  return {
    group: groupBy === 'day' ? Number(r.grp) * DAY_MS : r.grp === null ? null : String(r.grp),
    requests: Number(r.requests),
    promptTokens: Number(r.prompt_tokens),
    completionTokens: Number(r.completion_tokens),
    cachedTokens: Number(r.cached_tokens),
    reasoningTokens: Number(r.reasoning_tokens),
    costNanos: r.cost_nanos,
    unpricedRequests: Number(r.unpriced),
  };
}
