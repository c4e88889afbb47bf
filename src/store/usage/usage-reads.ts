/**
 * The ledger's reads, written once for both backends: totals over a time range of one project grouped by
 * UTC day, key, endpoint, model or workspace, in pages (the management usage API, the dashboard, `switchboard
 * usage`), and the rows one by one, newest first (the dashboard's Requests page, issue 34). Each distinct
 * shape of query is compiled once (sql-program.ts `prepared`): a report costs its statement only.
 *
 * Cost on a big ledger: the range of one project is read through the project/time index (a test checks the
 * plan), and grouping then costs one pass over the rows of that range whatever the page: a page is the
 * groups after the cursor, in group order. Text groups compare bytewise on both backends (SQLite's BINARY,
 * PostgreSQL's "C"), so pages and cursors agree whatever the database's collation. The cost sum is read as
 * text and made a BigInt: exact past 2^53 nano-dollars ($9M) on both.
 *
 * The Requests page walks (created_at, id) backwards through the same index (SQLite's entries end in the
 * rowid; PostgreSQL's carries `id`, its migration 011), stopping after the page. Filters on key, model and
 * status are checked on the rows the walk meets; a filter matching nothing therefore reads the range, as the
 * totals do, which is why SQLite runs both on the usage reader thread.
 */
import { sql, type Compilable, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import { DAY_MS, type RequestEntry, type RoutedUsage, type RequestsPage, type RequestsQuery, type UsageGroupBy, type UsagePage, type UsageQuery, type UsageTotals } from '../../core/store/usage-store.js';
import { sqlFor } from '../sql/sql-builder.js';
import { first, prepared, preparedRow, rows, type SqlDialect, type SqlProgram } from '../sql/sql-program.js';
import type { UsageTables } from './usage-tables.js';

const GROUP_COLUMNS = { key: 'key_id', endpoint: 'endpoint_id', model: 'model', workspace: 'workspace_id' } as const;
const NULLABLE_GROUPS: ReadonlySet<UsageGroupBy> = new Set(['model', 'workspace']);

const REQUEST_COLUMNS = [
  'id', 'request_id', 'workspace_id', 'endpoint_id', 'key_id', 'route', 'model', 'status', 'error_code', 'service_tier', 'latency_ms',
  'ttft_ms', 'prompt_tokens', 'completion_tokens', 'cached_tokens', 'reasoning_tokens', 'cost_nanos', 'upstream_server', 'retries', 'created_at',
] as const;
type RequestRow = Pick<Selectable<UsageTables['usage_events']>, (typeof REQUEST_COLUMNS)[number]>;

/** A page's arguments; only those its shape uses are present (preparedRow binds every key given). */
interface TotalsArgs extends Record<string, unknown> {
  projectId: string;
  start: number;
  end: number;
  limit?: number;
  after?: string;
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

export interface UsageReads {
  page(q: UsageQuery): SqlProgram<UsagePage>;
  requests(q: RequestsQuery): SqlProgram<RequestsPage>;
  request(projectId: string, id: number): SqlProgram<RequestEntry | null>;
  routedByEndpoint(projectId: string, since: number): SqlProgram<RoutedUsage[]>;
  /** The statement of a page, for checking its query plan. */
  pageQuery(q: UsageQuery): Compilable<TotalsRow>;
}

export function usageReads(dialect: SqlDialect): UsageReads {
  const { db } = sqlFor<UsageTables>(dialect);
  const groupOf = (groupBy: UsageGroupBy): RawBuilder<string | number | null> => {
    // created_at is an integer: this is integer division, the UTC day number.
    if (groupBy === 'day') return sql`created_at / ${sql.lit(DAY_MS)}`;
    const column = sql.ref(GROUP_COLUMNS[groupBy]);
    return dialect === 'postgres' ? sql`${column} COLLATE "C"` : sql`${column}`;
  };
  const totals = (groupBy: UsageGroupBy, { projectId, start, end, limit, after }: TotalsArgs) => {
    const group = groupOf(groupBy);
    let query = db
      .selectFrom('usage_events')
      .select([
        group.as('grp'),
        sql<number>`COUNT(*)`.as('requests'),
        sql<number>`SUM(prompt_tokens)`.as('prompt_tokens'),
        sql<number>`SUM(completion_tokens)`.as('completion_tokens'),
        sql<number>`SUM(cached_tokens)`.as('cached_tokens'),
        sql<number>`COALESCE(SUM(reasoning_tokens), 0)`.as('reasoning_tokens'),
        sql<string | null>`CAST(SUM(cost_nanos) AS TEXT)`.as('cost_nanos'),
        sql<number>`COUNT(*) - COUNT(cost_nanos)`.as('unpriced'),
      ])
      .where('project_id', '=', projectId)
      .where('created_at', '>=', start)
      .where('created_at', '<', end);
    // A null group sorts last, so it is after every cursor.
    if (after !== undefined) query = query.where(NULLABLE_GROUPS.has(groupBy) ? sql<boolean>`(${group} > ${after} OR ${group} IS NULL)` : sql<boolean>`${group} > ${after}`);
    const grouped = query.groupBy(sql`grp`).orderBy(sql`grp ASC NULLS LAST`);
    return limit === undefined ? grouped : grouped.limit(limit);
  };
  const pageShapes = new Map<string, (args: TotalsArgs) => Compilable<TotalsRow>>();
  const pageQuery = (q: UsageQuery): { query: Compilable<TotalsRow>; limit: number | null } => {
    let { start } = q;
    const args: TotalsArgs = { projectId: q.projectId, start, end: q.end };
    if (q.groupBy === 'day') {
      // The day cursor becomes the range: the next page starts with the day after it.
      if (q.after !== null) start = Math.max(start, (Math.floor(Number(q.after) / DAY_MS) + 1) * DAY_MS);
      args.start = start;
    } else if (q.after !== null) {
      args.after = String(q.after);
    }
    // One row more than the page: whether there is a next page, without counting the groups.
    if (q.limit !== null) args.limit = q.limit + 1;
    const shape = `${q.groupBy}/${args.after !== undefined}/${args.limit !== undefined}`;
    let build = pageShapes.get(shape);
    if (!build) pageShapes.set(shape, (build = preparedRow((a: TotalsArgs) => totals(q.groupBy, a))));
    return { query: build(args), limit: q.limit };
  };

  const requestShapes = new Map<string, (q: RequestsQuery) => Compilable<RequestRow>>();
  const requestsQuery = (q: RequestsQuery): Compilable<RequestRow> => {
    const shape = [q.keyId, q.model, q.status, q.before].map((v) => (v === null ? '-' : '+')).join('');
    let build = requestShapes.get(shape);
    if (!build) requestShapes.set(shape, (build = requestsShape(db)));
    return build(q);
  };
  const one = prepared((id: number, projectId: string) => db.selectFrom('usage_events').select(REQUEST_COLUMNS).where('id', '=', id).where('project_id', '=', projectId));
  const routed = routedQuery(db);

  return {
    *page(q) {
      const { query, limit } = pageQuery(q);
      const found = yield* rows(query);
      const hasMore = limit !== null && found.length > limit;
      return { items: (hasMore ? found.slice(0, limit) : found).map((r) => totalsOf(r, q.groupBy)), hasMore };
    },
    *requests(q) {
      const found = yield* rows(requestsQuery(q));
      const hasMore = found.length > q.limit;
      return { items: (hasMore ? found.slice(0, q.limit) : found).map(requestOf), hasMore };
    },
    *request(projectId, id) {
      const row = yield* first(one(id, projectId));
      return row ? requestOf(row) : null;
    },
    *routedByEndpoint(projectId, since) {
      // PostgreSQL's COUNT and SUM are bigint, read as text.
      return (yield* rows(routed(projectId, since))).map((r) => ({
        endpoint_id: r.endpoint_id,
        requests: Number(r.requests),
        prompt_tokens: Number(r.prompt_tokens),
        completion_tokens: Number(r.completion_tokens),
      }));
    },
    pageQuery: (q) => pageQuery(q).query,
  };
}

/** The semantic router's turns per endpoint since a time (the router config's 7-day usage). */
function routedQuery(db: Kysely<UsageTables>) {
  return prepared((projectId: string, since: number) =>
    db
      .selectFrom('usage_events')
      .select([
        'endpoint_id',
        sql<number>`COUNT(*)`.as('requests'),
        sql<number>`SUM(prompt_tokens)`.as('prompt_tokens'),
        sql<number>`SUM(completion_tokens)`.as('completion_tokens'),
      ])
      .where('project_id', '=', projectId)
      .where('route', '=', 'router')
      .where('created_at', '>=', since)
      .groupBy('endpoint_id')
      .orderBy('endpoint_id'),
  );
}

/**
 * The page query of one set of filters (which of key, model, status and cursor are given: the caller keeps
 * one per set), compiled once: every filter given reaches it as a value.
 */
function requestsShape(db: Kysely<UsageTables>): (q: RequestsQuery) => Compilable<RequestRow> {
  type Args = Record<string, unknown> & { projectId: string; start: number; end: number; limit: number; keyId?: string; model?: string; status?: string; at?: number; id?: number };
  const build = preparedRow((a: Args) => {
    let query = db.selectFrom('usage_events').select(REQUEST_COLUMNS).where('project_id', '=', a.projectId).where('created_at', '>=', a.start).where('created_at', '<', a.end);
    if (a.keyId !== undefined) query = query.where('key_id', '=', a.keyId);
    if (a.model !== undefined) query = query.where('model', '=', a.model);
    if (a.status !== undefined) query = query.where('status', '=', a.status);
    if (a.at !== undefined && a.id !== undefined) {
      const { at, id } = a;
      query = query.where((eb) => eb.or([eb('created_at', '<', at), eb.and([eb('created_at', '=', at), eb('id', '<', id)])]));
    }
    return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(a.limit);
  });
  return (q) => {
    // One row more than the page: whether a next page exists, without counting.
    const args: Args = { projectId: q.projectId, start: q.start, end: q.end, limit: q.limit + 1 };
    if (q.keyId !== null) args.keyId = q.keyId;
    if (q.model !== null) args.model = q.model;
    if (q.status !== null) args.status = q.status;
    if (q.before !== null) {
      args.at = q.before.createdAt;
      args.id = q.before.id;
    }
    return build(args);
  };
}

function totalsOf(r: TotalsRow, groupBy: UsageGroupBy): UsageTotals {
  return {
    group: groupBy === 'day' ? Number(r.grp) * DAY_MS : r.grp === null ? null : String(r.grp),
    requests: Number(r.requests),
    promptTokens: Number(r.prompt_tokens),
    completionTokens: Number(r.completion_tokens),
    cachedTokens: Number(r.cached_tokens),
    reasoningTokens: Number(r.reasoning_tokens),
    costNanos: r.cost_nanos === null ? null : BigInt(r.cost_nanos),
    unpricedRequests: Number(r.unpriced),
  };
}

const requestOf = (r: RequestRow): RequestEntry => ({
  id: Number(r.id),
  requestId: r.request_id,
  workspaceId: r.workspace_id,
  endpointId: r.endpoint_id,
  keyId: r.key_id,
  route: r.route,
  model: r.model,
  status: r.status,
  errorCode: r.error_code,
  serviceTier: r.service_tier,
  latencyMs: r.latency_ms,
  ttftMs: r.ttft_ms,
  promptTokens: r.prompt_tokens,
  completionTokens: r.completion_tokens,
  cachedTokens: r.cached_tokens,
  reasoningTokens: r.reasoning_tokens,
  costNanos: r.cost_nanos === null ? null : Number(r.cost_nanos),
  upstreamServer: r.upstream_server,
  retries: r.retries,
  createdAt: Number(r.created_at),
});
