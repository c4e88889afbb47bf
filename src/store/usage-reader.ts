/**
 * The event loop's side of the usage reader thread (usage-reader-thread.ts): the read programs of
 * usage/usage-reads.ts driven here, each statement run on the thread, one at a time, answered by promise.
 * The thread is started on the first report. The management rate limit (60 a minute per project) bounds
 * the queue.
 */
import { Worker } from 'node:worker_threads';
import type { ReaderMessage, ReaderReply } from './usage-reader-thread.js';
import type { RequestsPage, RequestsQuery, UsagePage, UsageQuery } from '../core/store/usage-store.js';
import { isNative, type QueryOutcome, type SqlProgram } from './sql/sql-program.js';
import { driveAsync } from './sql/sql-runner.js';
import { usageReads } from './usage/usage-reads.js';

export interface UsageReader {
  page(query: UsageQuery): Promise<UsagePage>;
  /** The Requests page's rows, on the same thread. */
  requests(query: RequestsQuery): Promise<RequestsPage>;
  /** Fails the queries still waiting, closes the thread's connection and ends the thread. */
  close(): Promise<void>;
}

interface Pending {
  resolve(rows: readonly unknown[]): void;
  reject(err: Error): void;
}

export function createUsageReader(dbPath: string): UsageReader {
  const reads = usageReads('sqlite');
  let worker: Worker | null = null;
  let nextId = 1;
  const pending = new Map<number, Pending>();

  const failAll = (err: Error): void => {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };

  const start = (): Worker => {
    const w = new Worker(new URL('./usage-reader-thread.js', import.meta.url), { workerData: { path: dbPath } });
    // An idle reader must not keep the process alive.
    w.unref();
    w.on('message', (reply: ReaderReply) => {
      if (reply.kind === 'closed') return;
      const p = pending.get(reply.id);
      pending.delete(reply.id);
      if (reply.kind === 'rows') p?.resolve(reply.rows);
      else p?.reject(new Error(`usage query failed: ${reply.message}`));
    });
    // A thread that died (its database unreadable, say) fails what it held; the next report starts another.
    w.on('error', (err) => failAll(err));
    w.on('exit', () => {
      if (worker === w) worker = null;
      failAll(new Error('the usage reader thread stopped'));
    });
    return w;
  };

  const read = <R>(program: SqlProgram<R>): Promise<R> =>
    driveAsync(program, async (step) => {
      if (isNative(step)) throw new Error('the usage reader thread runs no native step');
      worker ??= start();
      const id = nextId++;
      const found = new Promise<readonly unknown[]>((resolve, reject) => pending.set(id, { resolve, reject }));
      worker.postMessage({ kind: 'query', id, sql: step.sql, parameters: step.parameters } satisfies ReaderMessage);
      const rows = await found;
      return { rows, changes: rows.length } satisfies QueryOutcome;
    });

  return {
    page: (query) => read(reads.page(query)),
    requests: (query) => read(reads.requests(query)),
    async close() {
      const w = worker;
      worker = null;
      if (!w) return;
      const closed = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      w.postMessage({ kind: 'close' } satisfies ReaderMessage);
      // The thread answers the queries before the close in order, then closes its connection.
      await Promise.race([new Promise<void>((resolve) => w.on('message', (r: ReaderReply) => r.kind === 'closed' && resolve())), closed]);
      await w.terminate();
    },
  };
}
