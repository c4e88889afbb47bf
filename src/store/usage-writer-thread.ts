/**
 * The usage ledger's writer thread: owns its own SQLite connection (synchronous=NORMAL, see db.ts) and
 * writes each batch it receives in one transaction, so neither the insert CPU nor any fsync ever runs on
 * the event loop. A batch is one transaction: a failed batch leaves nothing behind, so its retry cannot
 * double-bill.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { unpack } from 'msgpackr';
import { yieldToEventLoop } from '../thread-priority.js';
import { openDatabase, writeTransaction } from './db.js';
import type { LedgerRow } from './usage-ledger.js';

/** Rows travel msgpack-encoded in a transferred buffer: far cheaper than structured-cloning objects. */
export type WriterMessage = { readonly kind: 'rows'; readonly packed: Uint8Array } | { readonly kind: 'close' };
export type WriterReply =
  | { readonly kind: 'written'; readonly count: number }
  | { readonly kind: 'failed'; readonly message: string; readonly packed: Uint8Array }
  | { readonly kind: 'closed' };

const COLUMNS = [
  'requestId', 'projectId', 'workspaceId', 'endpointId', 'keyId', 'route', 'promptTokens', 'completionTokens',
  'cachedTokens', 'reasoningTokens', 'serviceTier', 'tierMultiplier', 'status', 'usageSource', 'latencyMs', 'createdAt',
  'model', 'costNanos',
] as const satisfies readonly (keyof LedgerRow)[];

/** Rows per INSERT statement: one multi-row statement costs ~1 us a row less than one statement per row. */
const ROWS_PER_STATEMENT = 32;

if (parentPort) {
  // At normal priority one flush every 50 ms put ~0.5 ms into whichever request was in flight on a shared
  // core: the whole of the 1-connection p99 (1.1 ms with it, 0.55 ms without; bench/RESULTS.md).
  yieldToEventLoop();
  const port = parentPort;
  const db = openDatabase((workerData as { path: string }).path, 'NORMAL');
  const insertSql = (rows: number): string => `
    INSERT INTO usage_events (request_id, project_id, workspace_id, endpoint_id, key_id, route, prompt_tokens,
      completion_tokens, cached_tokens, reasoning_tokens, service_tier, tier_multiplier, status, usage_source, latency_ms, created_at,
      model, cost_nanos)
    VALUES ${Array.from({ length: rows }, () => `(${COLUMNS.map(() => '?').join(', ')})`).join(', ')}`;
  const insertOne = db.prepare(insertSql(1));
  const insertMany = db.prepare(insertSql(ROWS_PER_STATEMENT));
  // Argument arrays reused for every statement: binding row by row allocated an array per row.
  const manyArgs: unknown[] = new Array<unknown>(ROWS_PER_STATEMENT * COLUMNS.length);
  const oneArgs: unknown[] = new Array<unknown>(COLUMNS.length);
  const bind = (row: LedgerRow, args: unknown[], at: number): void => {
    COLUMNS.forEach((column, c) => {
      args[at + c] = row[column];
    });
  };
  const insertAll = writeTransaction(db, (rows: readonly LedgerRow[]) => {
    let next = 0;
    for (; next + ROWS_PER_STATEMENT <= rows.length; next += ROWS_PER_STATEMENT) {
      for (let r = 0; r < ROWS_PER_STATEMENT; r += 1) bind(rows[next + r] as LedgerRow, manyArgs, r * COLUMNS.length);
      insertMany.run(manyArgs);
    }
    for (; next < rows.length; next += 1) {
      bind(rows[next] as LedgerRow, oneArgs, 0);
      insertOne.run(oneArgs);
    }
  });
  port.on('message', (message: WriterMessage) => {
    if (message.kind === 'close') {
      db.close();
      port.postMessage({ kind: 'closed' } satisfies WriterReply);
      return;
    }
    try {
      const rows = unpack(message.packed) as LedgerRow[];
      insertAll(rows);
      port.postMessage({ kind: 'written', count: rows.length } satisfies WriterReply);
    } catch (err) {
      port.postMessage({ kind: 'failed', message: (err as Error).message, packed: message.packed } satisfies WriterReply);
    }
  });
}
