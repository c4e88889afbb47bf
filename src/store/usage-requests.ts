/**
 * The ledger's rows one by one, newest first, for the dashboard's Requests page (issue 34): one query
 * definition for SQLite and PostgreSQL (placeholders differ only), the rows mapped once.
 *
 * Cost: `project_id = ? AND created_at` in range, ordered by (created_at, id) descending, is a backward
 * walk of the project/time index (SQLite's entries end in the rowid; PostgreSQL's index carries `id`,
 * migration 011), stopping after the page. Filters on key, model and status are checked on the rows the
 * walk meets; a filter matching nothing therefore reads the range, as the totals query always does, which
 * is why the SQLite side runs on the usage reader thread.
 */
import type Database from 'better-sqlite3';
import type { RequestEntry, RequestsQuery } from '../core/store/usage-store.js';
import type { Db } from './db.js';

export const REQUEST_COLUMNS = `id, request_id, workspace_id, endpoint_id, key_id, route, model, status, error_code, service_tier,
  latency_ms, ttft_ms, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_nanos, upstream_server, retries, created_at`;

export interface RequestRow {
  id: number;
  request_id: string;
  workspace_id: string | null;
  endpoint_id: string;
  key_id: string;
  route: string;
  model: string | null;
  status: string;
  error_code: string | null;
  service_tier: string;
  latency_ms: number;
  ttft_ms: number | null;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number | null;
  cost_nanos: number | null;
  upstream_server: string | null;
  retries: number | null;
  created_at: number;
}

export const requestOf = (r: RequestRow): RequestEntry => ({
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

/**
 * The page's SQL and its values in order; `placeholder(n)` writes the dialect's n-th (1-based) parameter.
 * One row more than the page is asked for: whether a next page exists, without counting.
 */
export function requestsSql(q: RequestsQuery, placeholder: (n: number) => string): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const param = (v: unknown): string => {
    values.push(v);
    return placeholder(values.length);
  };
  const where = [`project_id = ${param(q.projectId)}`, `created_at >= ${param(q.start)}`, `created_at < ${param(q.end)}`];
  if (q.keyId !== null) where.push(`key_id = ${param(q.keyId)}`);
  if (q.model !== null) where.push(`model = ${param(q.model)}`);
  if (q.status !== null) where.push(`status = ${param(q.status)}`);
  if (q.before !== null) {
    const at = param(q.before.createdAt);
    where.push(`(created_at < ${at} OR (created_at = ${at} AND id < ${param(q.before.id)}))`);
  }
  const text = `SELECT ${REQUEST_COLUMNS} FROM usage_events WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT ${param(q.limit + 1)}`;
  return { text, values };
}

export function pageOf(rows: readonly RequestRow[], limit: number): { items: RequestEntry[]; hasMore: boolean } {
  const hasMore = rows.length > limit;
  return { items: (hasMore ? rows.slice(0, limit) : rows).map(requestOf), hasMore };
}

export const ONE_REQUEST_SQL = (placeholder: (n: number) => string): string =>
  `SELECT ${REQUEST_COLUMNS} FROM usage_events WHERE id = ${placeholder(1)} AND project_id = ${placeholder(2)}`;

/** SQLite's side: named parameters (`@p1`...), prepared once per distinct filter set. */
export interface SqliteRequests {
  requests(q: RequestsQuery): { items: RequestEntry[]; hasMore: boolean };
  request(projectId: string, id: number): RequestEntry | null;
  /** The SQL of a page, for checking its query plan. */
  sql(q: RequestsQuery): string;
}

const sqliteParam = (n: number): string => `@p${n}`;
const named = (values: readonly unknown[]): Record<string, unknown> => Object.fromEntries(values.map((v, i) => [`p${i + 1}`, v]));

export function createSqliteRequests(db: Db): SqliteRequests {
  const statements = new Map<string, Database.Statement<[Record<string, unknown>], RequestRow>>();
  const one = db.prepare<[Record<string, unknown>], RequestRow>(ONE_REQUEST_SQL(sqliteParam));
  return {
    sql: (q) => requestsSql(q, sqliteParam).text,
    requests(q) {
      const { text, values } = requestsSql(q, sqliteParam);
      let s = statements.get(text);
      if (!s) statements.set(text, (s = db.prepare<[Record<string, unknown>], RequestRow>(text)));
      return pageOf(s.all(named(values)), q.limit);
    },
    request(projectId, id) {
      const row = one.get(named([id, projectId]));
      return row ? requestOf(row) : null;
    },
  };
}
