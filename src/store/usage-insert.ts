/**
 * The one INSERT of usage rows, shared by the writer thread (every batch) and the journal replay at
 * start (rows a killed process had answered but not stored). Not a transaction: callers wrap it in theirs.
 */
import type { Db } from './db.js';
import type { LedgerRow } from './usage-ledger.js';

export const USAGE_COLUMNS = [
  'requestId', 'projectId', 'workspaceId', 'endpointId', 'keyId', 'route', 'promptTokens', 'completionTokens',
  'cachedTokens', 'reasoningTokens', 'serviceTier', 'tierMultiplier', 'status', 'usageSource', 'latencyMs', 'createdAt',
  'model', 'costNanos', 'ttftMs', 'errorCode', 'upstreamServer', 'retries',
] as const satisfies readonly (keyof LedgerRow)[];

/** Rows per INSERT statement: one multi-row statement costs ~1 us a row less than one statement per row. */
const ROWS_PER_STATEMENT = 32;

const insertSql = (rows: number): string => `
  INSERT INTO usage_events (request_id, project_id, workspace_id, endpoint_id, key_id, route, prompt_tokens,
    completion_tokens, cached_tokens, reasoning_tokens, service_tier, tier_multiplier, status, usage_source, latency_ms, created_at,
    model, cost_nanos, ttft_ms, error_code, upstream_server, retries)
  VALUES ${Array.from({ length: rows }, () => `(${USAGE_COLUMNS.map(() => '?').join(', ')})`).join(', ')}`;

export function createUsageInserter(db: Db): (rows: readonly LedgerRow[]) => void {
  const insertOne = db.prepare(insertSql(1));
  const insertMany = db.prepare(insertSql(ROWS_PER_STATEMENT));
  // Argument arrays reused for every statement: binding row by row allocated an array per row.
  const manyArgs: unknown[] = new Array<unknown>(ROWS_PER_STATEMENT * USAGE_COLUMNS.length);
  const oneArgs: unknown[] = new Array<unknown>(USAGE_COLUMNS.length);
  const bind = (row: LedgerRow, args: unknown[], at: number): void => {
    USAGE_COLUMNS.forEach((column, c) => {
      // A row replayed from an older journal segment may lack the newer columns: NULL, not undefined.
      args[at + c] = row[column] ?? null;
    });
  };
  return (rows) => {
    let next = 0;
    for (; next + ROWS_PER_STATEMENT <= rows.length; next += ROWS_PER_STATEMENT) {
      for (let r = 0; r < ROWS_PER_STATEMENT; r += 1) bind(rows[next + r] as LedgerRow, manyArgs, r * USAGE_COLUMNS.length);
      insertMany.run(manyArgs);
    }
    for (; next < rows.length; next += 1) {
      bind(rows[next] as LedgerRow, oneArgs, 0);
      insertOne.run(oneArgs);
    }
  };
}

/**
 * A journal segment's rows go in with its marker, in the caller's transaction: the marker row makes the
 * insert happen once however many processes replay or write the same segment. Returns false when the
 * segment was already applied (its rows are in the ledger; nothing was inserted).
 */
export function createSegmentApplier(db: Db): (segment: string, rows: readonly LedgerRow[]) => boolean {
  const insert = createUsageInserter(db);
  const mark = db.prepare('INSERT INTO usage_journal_segments (segment) VALUES (?) ON CONFLICT (segment) DO NOTHING');
  return (segment, rows) => {
    if (mark.run(segment).changes === 0) return false;
    insert(rows);
    return true;
  };
}

/** Markers are needed only while their segment file exists; once it is unlinked they can go. */
export function createMarkerForgetter(db: Db): (segments: readonly string[]) => void {
  const forget = db.prepare('DELETE FROM usage_journal_segments WHERE segment = ?');
  return (segments) => {
    for (const s of segments) forget.run(s);
  };
}
