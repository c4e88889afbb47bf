/**
 * The usage API's reader thread: runs the totals query and the Requests page's (usage/usage-reads.ts) on
 * its own SQLite connection, so a report over a long range of a big ledger, one pass over every row in it,
 * never blocks the event loop that serves inference. Reniced like the writer threads: a report waits for
 * traffic, never the reverse.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { yieldToEventLoop } from '../thread-priority.js';
import { openDatabase } from './db.js';
import type { RequestsPage, RequestsQuery, UsagePage, UsageQuery } from '../core/store/usage-store.js';
import { createSqliteUsageReads } from './usage/sqlite-usage-reads.js';

export type ReaderMessage =
  | { readonly kind: 'page'; readonly id: number; readonly query: UsageQuery }
  | { readonly kind: 'requests'; readonly id: number; readonly query: RequestsQuery }
  | { readonly kind: 'close' };
/** Structured clone carries the BigInt cost sums as they are. */
export type ReaderReply =
  | { readonly kind: 'page'; readonly id: number; readonly page: UsagePage }
  | { readonly kind: 'requests'; readonly id: number; readonly page: RequestsPage }
  | { readonly kind: 'failed'; readonly id: number; readonly message: string }
  | { readonly kind: 'closed' };

if (parentPort) {
  yieldToEventLoop();
  const port = parentPort;
  const db = openDatabase((workerData as { path: string }).path, 'NORMAL');
  // The dashboard's Requests page too: a filter matching nothing reads the whole range, so not on the event loop.
  const reads = createSqliteUsageReads(db);
  port.on('message', (message: ReaderMessage) => {
    if (message.kind === 'close') {
      db.close();
      port.postMessage({ kind: 'closed' } satisfies ReaderReply);
      return;
    }
    try {
      if (message.kind === 'requests') port.postMessage({ kind: 'requests', id: message.id, page: reads.requests(message.query) } satisfies ReaderReply);
      else port.postMessage({ kind: 'page', id: message.id, page: reads.page(message.query) } satisfies ReaderReply);
    } catch (err) {
      port.postMessage({ kind: 'failed', id: message.id, message: (err as Error).message } satisfies ReaderReply);
    }
  });
}
