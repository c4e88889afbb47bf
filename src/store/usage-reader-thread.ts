/**
 * The usage API's reader thread: runs the totals query and the Requests page's (usage/usage-reads.ts) on
 * its own SQLite connection, so a report over a long range of a big ledger, one pass over every row in it,
 * never blocks the event loop that serves inference. Reniced like the writer threads: a report waits for
 * traffic, never the reverse.
 *
 * It is handed each statement compiled (usage-reader.ts drives the program on the event loop, where the
 * query builder is loaded already): importing Kysely here would cost the first report ~0.3 s of CPU.
 * Statements are prepared once per text, and only statements that read are run.
 */
import type { Statement } from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { yieldToEventLoop } from '../thread-priority.js';
import { openDatabase } from './db.js';

export type ReaderMessage =
  | { readonly kind: 'query'; readonly id: number; readonly sql: string; readonly parameters: readonly unknown[] }
  | { readonly kind: 'close' };
/** Structured clone carries the rows as they are. */
export type ReaderReply =
  | { readonly kind: 'rows'; readonly id: number; readonly rows: readonly unknown[] }
  | { readonly kind: 'failed'; readonly id: number; readonly message: string }
  | { readonly kind: 'closed' };

/** Distinct statements kept prepared (the usage reads have a few dozen shapes). */
const STATEMENT_CACHE_SIZE = 128;

if (parentPort) {
  yieldToEventLoop();
  const port = parentPort;
  const db = openDatabase((workerData as { path: string }).path, 'NORMAL');
  const statements = new Map<string, Statement>();
  const prepared = (text: string): Statement => {
    let stmt = statements.get(text);
    if (!stmt) {
      if (statements.size >= STATEMENT_CACHE_SIZE) statements.clear();
      stmt = db.prepare(text);
      // A reader thread must not write: its connection has no share in the writers' locking order.
      if (!stmt.reader) throw new Error('the usage reader thread runs only statements that read');
      statements.set(text, stmt);
    }
    return stmt;
  };
  port.on('message', (message: ReaderMessage) => {
    if (message.kind === 'close') {
      db.close();
      port.postMessage({ kind: 'closed' } satisfies ReaderReply);
      return;
    }
    try {
      port.postMessage({ kind: 'rows', id: message.id, rows: prepared(message.sql).all(...message.parameters) } satisfies ReaderReply);
    } catch (err) {
      port.postMessage({ kind: 'failed', id: message.id, message: (err as Error).message } satisfies ReaderReply);
    }
  });
}
