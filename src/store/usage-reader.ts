/**
 * The event loop's side of the usage reader thread (usage-reader-thread.ts): one query at a time in a
 * thread started on the first report, answered by promise. The management rate limit (60 a minute per
 * project) bounds the queue.
 */
import { Worker } from 'node:worker_threads';
import type { ReaderMessage, ReaderReply } from './usage-reader-thread.js';
import type { RequestsPage, RequestsQuery } from '../core/store/usage-store.js';
import type { UsagePage, UsageQuery } from '../core/store/usage-store.js';

export interface UsageReader {
  page(query: UsageQuery): Promise<UsagePage>;
  /** The Requests page's rows (usage/usage-reads.ts), on the same thread. */
  requests(query: RequestsQuery): Promise<RequestsPage>;
  /** Fails the queries still waiting, closes the thread's connection and ends the thread. */
  close(): Promise<void>;
}

interface Pending {
  resolve(page: UsagePage | RequestsPage): void;
  reject(err: Error): void;
}

export function createUsageReader(dbPath: string): UsageReader {
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
      if (reply.kind === 'page' || reply.kind === 'requests') p?.resolve(reply.page);
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

  // Each reply's kind is its message's: the page a query resolves with is the type its caller asked for.
  const ask = <T extends UsagePage | RequestsPage>(message: Extract<ReaderMessage, { id: number }>): Promise<T> => {
    worker ??= start();
    const done = new Promise<T>((resolve, reject) => pending.set(message.id, { resolve: resolve as (page: UsagePage | RequestsPage) => void, reject }));
    worker.postMessage(message);
    return done;
  };

  return {
    page: (query) => ask<UsagePage>({ kind: 'page', id: nextId++, query }),
    requests: (query) => ask<RequestsPage>({ kind: 'requests', id: nextId++, query }),
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
