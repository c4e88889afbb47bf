/**
 * Reads a running gateway's usage ledger (table `usage_events`) through a readonly SQLite connection.
 * The ledger writes in batches, so a row is polled for rather than expected at once.
 */
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';

export interface UsageEventRow {
  readonly id: number;
  readonly request_id: string;
  readonly project_id: string;
  readonly workspace_id: string | null;
  readonly endpoint_id: string;
  readonly key_id: string;
  readonly route: string;
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly cached_tokens: number;
  readonly reasoning_tokens: number | null;
  readonly service_tier: string;
  readonly tier_multiplier: number;
  readonly status: string;
  /** The catalogue code of the client's error; null for a completed turn. */
  readonly error_code: string | null;
  readonly usage_source: string;
  readonly latency_ms: number;
  readonly created_at: number;
}

export interface UsageDb {
  /** Every row for the request id (the unique index makes it zero or one). */
  rowsFor(requestId: string): UsageEventRow[];
  /** Polls until the request's row is written, or throws after `timeoutMs`. */
  waitForRow(requestId: string, timeoutMs?: number): Promise<UsageEventRow>;
  /** Polls until `count` rows exist in total, or throws after `timeoutMs`. */
  waitForCount(count: number, timeoutMs?: number): Promise<number>;
  count(): number;
  /** The newest rows, newest first. */
  recent(limit: number): UsageEventRow[];
  distinctRequestIds(): number;
  /** The id of the key whose value is given (keys are stored by SHA-256 of the value). */
  keyIdFor(value: string): string;
  close(): void;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export function openUsageDb(path: string): UsageDb {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  const byRequest = db.prepare<[string], UsageEventRow>('SELECT * FROM usage_events WHERE request_id = ?');
  const total = db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM usage_events');
  const distinct = db.prepare<[], { n: number }>('SELECT COUNT(DISTINCT request_id) AS n FROM usage_events');
  const newest = db.prepare<[number], UsageEventRow>('SELECT * FROM usage_events ORDER BY id DESC LIMIT ?');
  const keyByHash = db.prepare<[string], { key_id: string }>('SELECT key_id FROM api_key_secrets WHERE hash = ?');

  const count = (): number => total.get()?.n ?? 0;

  return {
    rowsFor: (requestId) => byRequest.all(requestId),
    async waitForRow(requestId, timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const row = byRequest.get(requestId);
        if (row) return row;
        if (Date.now() > until) throw new Error(`no usage row for ${requestId} after ${timeoutMs} ms`);
        await sleep(10);
      }
    },
    async waitForCount(expected, timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const n = count();
        if (n >= expected || Date.now() > until) return n;
        await sleep(10);
      }
    },
    count,
    recent: (limit) => newest.all(limit),
    distinctRequestIds: () => distinct.get()?.n ?? 0,
    keyIdFor(value) {
      const row = keyByHash.get(createHash('sha256').update(value).digest('hex'));
      if (!row) throw new Error('the key is not in the database');
      return row.key_id;
    },
    close: () => db.close(),
  };
}
