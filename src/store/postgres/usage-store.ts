/**
 * The usage store on PostgreSQL (issue 12, tables in migrations/004-usage.ts), shared by every replica:
 * the ledger the usage API and `switchboard usage` read, the hourly spend rollup the budgets are rebuilt
 * from, and the budget caps. A change of caps is announced on BUDGETS_TOPIC in its transaction, so every
 * replica reloads them (main.ts).
 *
 * Rows go in with one INSERT a batch over unnest()ed column arrays: 22 parameters whatever the batch size,
 * so the statement is prepared once per connection and never meets the 65,535-parameter limit.
 */
import type { BudgetLevel } from '../../core/limits/budgets.js';
import type { LedgerRow, UsageGroupBy, UsagePage, UsageQuery, UsageStore, UsageTotals } from '../../core/store/usage-store.js';
import { DAY_MS } from '../../core/store/usage-store.js';
import type { PgQueryable, PgStore } from './pg-store.js';
import { ONE_REQUEST_SQL, pageOf, requestOf, requestsSql, type RequestRow } from '../usage-requests.js';
import { budgetOf, spendOf, type BudgetRow, type SpendQueryRow } from '../usage-rows.js';

const pgParam = (n: number): string => `$${n}`;

export const BUDGETS_TOPIC = 'budgets';

const INSERT_USAGE = `
  INSERT INTO usage_events (request_id, project_id, workspace_id, endpoint_id, key_id, route, prompt_tokens,
    completion_tokens, cached_tokens, reasoning_tokens, service_tier, tier_multiplier, status, usage_source, latency_ms, created_at,
    model, cost_nanos, ttft_ms, error_code, upstream_server, retries)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[],
    $9::bigint[], $10::bigint[], $11::text[], $12::float8[], $13::text[], $14::text[], $15::float8[], $16::bigint[], $17::text[], $18::bigint[],
    $19::float8[], $20::text[], $21::text[], $22::int[])`;

/** Inserts rows in the caller's transaction (or as one statement). */
export async function pgInsertUsage(db: PgQueryable, rows: readonly LedgerRow[]): Promise<void> {
  if (rows.length === 0) return;
  const col = <T>(pick: (r: LedgerRow) => T): T[] => rows.map(pick);
  await db.query({
    name: 'switchboard-usage-insert',
    text: INSERT_USAGE,
    values: [
      col((r) => r.requestId), col((r) => r.projectId), col((r) => r.workspaceId), col((r) => r.endpointId), col((r) => r.keyId),
      col((r) => r.route), col((r) => r.promptTokens), col((r) => r.completionTokens), col((r) => r.cachedTokens),
      col((r) => r.reasoningTokens), col((r) => r.serviceTier), col((r) => r.tierMultiplier), col((r) => r.status),
      col((r) => r.usageSource), col((r) => r.latencyMs), col((r) => r.createdAt), col((r) => r.model), col((r) => r.costNanos),
      col((r) => r.ttftMs ?? null), col((r) => r.errorCode ?? null), col((r) => r.upstreamServer ?? null), col((r) => r.retries ?? null),
    ],
  });
}

/**
 * A journal segment's rows with its marker, in the caller's transaction: the marker makes the segment go
 * in once, however many writers and replays meet it. Returns the rows inserted (0: stored before).
 */
export async function pgStoreSegment(db: PgQueryable, segment: string, rows: readonly LedgerRow[]): Promise<number> {
  const marked = await db.query('INSERT INTO usage_journal_segments (segment) VALUES ($1) ON CONFLICT (segment) DO NOTHING', [segment]);
  if (marked.rowCount === 0) return 0;
  await pgInsertUsage(db, rows);
  return rows.length;
}

export async function pgForgetSegments(db: PgQueryable, segments: readonly string[]): Promise<void> {
  if (segments.length > 0) await db.query('DELETE FROM usage_journal_segments WHERE segment = ANY($1::text[])', [segments]);
}

/** Text groups compare bytewise ("C"), as SQLite does: pages and cursors agree whatever the database's collation. */
const GROUP_COLUMNS: Record<UsageGroupBy, { readonly expr: string; readonly nullable: boolean }> = {
  day: { expr: `(created_at / ${DAY_MS})`, nullable: false },
  key: { expr: 'key_id COLLATE "C"', nullable: false },
  endpoint: { expr: 'endpoint_id COLLATE "C"', nullable: false },
  model: { expr: 'model COLLATE "C"', nullable: true },
  workspace: { expr: 'workspace_id COLLATE "C"', nullable: true },
};

/** $1 project, $2 start, $3 end, $4 page size + 1 (NULL: all), $5 cursor. */
function totalsSql(groupBy: UsageGroupBy, withCursor: boolean): string {
  const { expr, nullable } = GROUP_COLUMNS[groupBy];
  const cursor = !withCursor ? '' : nullable ? `AND (${expr} > $5 OR ${expr} IS NULL)` : `AND ${expr} > $5`;
  // Sums as text: NUMERIC sums of BIGINT, exact (the cost past 2^53 nano-dollars too).
  return `
    SELECT ${expr} AS grp, COUNT(*) AS requests,
      SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens,
      SUM(cached_tokens) AS cached_tokens, COALESCE(SUM(reasoning_tokens), 0) AS reasoning_tokens,
      SUM(cost_nanos)::text AS cost_nanos, COUNT(*) - COUNT(cost_nanos) AS unpriced
    FROM usage_events
    WHERE project_id = $1 AND created_at >= $2 AND created_at < $3 ${cursor}
    GROUP BY 1
    ORDER BY 1 ASC NULLS LAST
    LIMIT $4`;
}

interface TotalsRow {
  grp: string | number | null;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  cost_nanos: string | null;
  unpriced: number;
}

async function totalsPage(db: PgQueryable, q: UsageQuery): Promise<UsagePage> {
  let { start } = q;
  let after: string | null = null;
  if (q.groupBy === 'day') {
    // The day cursor becomes the range: the next page starts with the day after it.
    if (q.after !== null) start = Math.max(start, (Math.floor(Number(q.after) / DAY_MS) + 1) * DAY_MS);
  } else if (q.after !== null) {
    after = String(q.after);
  }
  const values: unknown[] = [q.projectId, start, q.end, q.limit === null ? null : q.limit + 1];
  if (after !== null) values.push(after);
  const { rows } = await db.query<TotalsRow>(totalsSql(q.groupBy, after !== null), values);
  const hasMore = q.limit !== null && rows.length > q.limit;
  const items = (hasMore ? rows.slice(0, q.limit ?? 0) : rows).map((r): UsageTotals => ({
    group: q.groupBy === 'day' ? Number(r.grp) * DAY_MS : r.grp === null ? null : String(r.grp),
    requests: r.requests,
    promptTokens: r.prompt_tokens,
    completionTokens: r.completion_tokens,
    cachedTokens: r.cached_tokens,
    reasoningTokens: r.reasoning_tokens,
    costNanos: r.cost_nanos === null ? null : BigInt(r.cost_nanos),
    unpricedRequests: r.unpriced,
  }));
  return { items, hasMore };
}

/** From the hourly rollup, not the ledger: its size is hours x targets, not turns. */
const spendSql = (column: 'endpoint_id' | 'workspace_id'): string => `
  SELECT project_id, ${column} AS target_id,
    SUM(CASE WHEN hour_start >= $1 THEN tokens ELSE 0 END) AS hourly,
    SUM(CASE WHEN hour_start >= $2 THEN tokens ELSE 0 END) AS daily,
    SUM(tokens) AS total,
    SUM(CASE WHEN hour_start >= $1 THEN nanos ELSE 0 END) AS hourly_nanos,
    SUM(CASE WHEN hour_start >= $2 THEN nanos ELSE 0 END) AS daily_nanos,
    SUM(nanos) AS total_nanos
  FROM usage_spend_hourly WHERE ${column} <> '' GROUP BY project_id, ${column}`;

export function createPgUsageStore(store: PgStore): UsageStore {
  const { pool } = store;
  return {
    page: (q) => totalsPage(pool, q),
    async requests(q) {
      const { text, values } = requestsSql(q, pgParam);
      const { rows } = await pool.query<RequestRow>(text, values);
      return pageOf(rows, q.limit);
    },
    async request(projectId, id) {
      const { rows } = await pool.query<RequestRow>(ONE_REQUEST_SQL(pgParam), [id, projectId]);
      return rows[0] ? requestOf(rows[0]) : null;
    },
    async listBudgets() {
      const { rows } = await pool.query<BudgetRow>('SELECT * FROM budgets ORDER BY project_id, level, target_id');
      return rows.map(budgetOf);
    },
    putBudget: (b, now) =>
      store.transaction(async (c) => {
        await c.query(
          `INSERT INTO budgets (project_id, level, target_id, hourly_tokens, daily_tokens, hard_cap_tokens, hourly_cents, daily_cents, hard_cap_cents, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
           ON CONFLICT (project_id, level, target_id) DO UPDATE SET hourly_tokens = excluded.hourly_tokens,
             daily_tokens = excluded.daily_tokens, hard_cap_tokens = excluded.hard_cap_tokens, hourly_cents = excluded.hourly_cents,
             daily_cents = excluded.daily_cents, hard_cap_cents = excluded.hard_cap_cents, updated_at = excluded.updated_at`,
          [b.projectId, b.level, b.targetId, b.caps.hourlyTokens, b.caps.dailyTokens, b.caps.hardCapTokens, b.caps.hourlyCents ?? null, b.caps.dailyCents ?? null, b.caps.hardCapCents ?? null, now],
        );
        await store.notifyChange(c, BUDGETS_TOPIC);
      }),
    removeBudget: (projectId, level, targetId) =>
      store.transaction(async (c) => {
        const { rowCount } = await c.query('DELETE FROM budgets WHERE project_id = $1 AND level = $2 AND target_id = $3', [projectId, level, targetId]);
        if (rowCount === 0) return false;
        await store.notifyChange(c, BUDGETS_TOPIC);
        return true;
      }),
    storeSegment: (segment, rows) => store.transaction((c) => pgStoreSegment(c, segment, rows)),
    forgetSegments: (segments) => pgForgetSegments(pool, segments),
    async spend(level, since) {
      const { rows } = await pool.query<SpendQueryRow>(spendSql(level === 'endpoint' ? 'endpoint_id' : 'workspace_id'), [since.hourStart, since.dayStart]);
      return rows.map(spendOf);
    },
    // The pool is the backend's, closed with it.
    close: async () => undefined,
  };
}
