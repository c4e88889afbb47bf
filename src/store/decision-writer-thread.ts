/**
 * The decision log's writer thread: its own SQLite connection (synchronous=NORMAL, see db.ts), one
 * transaction per batch. Prompt excerpts are sealed here (AES-256-GCM, store/secret-box.ts, the request
 * id as associated data), so neither the cipher nor the insert runs on the event loop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { unpack } from 'msgpackr';
import { yieldToEventLoop } from '../thread-priority.js';
import { openDatabase, writeTransaction } from './db.js';
import type { DecisionRecord } from './decision-log.js';
import { loadSecretBox, storedSealedValues } from './secret-box.js';

export type DecisionWriterMessage =
  | { readonly kind: 'rows'; readonly seq: number; readonly packed: Uint8Array }
  | { readonly kind: 'prune'; readonly seq: number; readonly before: number }
  | { readonly kind: 'close' };
export type DecisionWriterReply =
  | { readonly kind: 'done'; readonly seq: number; readonly error: string | null }
  | { readonly kind: 'closed' };

if (parentPort) {
  // Like the usage writer (store/usage-writer-thread.ts): a batch must not preempt the event loop.
  yieldToEventLoop();
  const port = parentPort;
  const path = (workerData as { path: string }).path;
  const db = openDatabase(path, 'NORMAL');
  const box = loadSecretBox(path, storedSealedValues(db));
  const insert = db.prepare(`
    INSERT INTO routing_decisions (request_id, project_id, workspace_id, created_at, route_reason, query_preview, detail)
    VALUES (?, ?, ?, ?, ?, ?, ?)`);
  // Sealed before the transaction: the write lock it takes first (db.ts) is held only for the inserts,
  // since the event loop's management writes wait on it.
  const insertAll = writeTransaction(db, (rows: readonly DecisionRecord[], sealed: readonly string[]) => {
    rows.forEach((r, i) => {
      insert.run(r.requestId, r.projectId, r.workspaceId, r.createdAt, r.routeReason, sealed[i] ?? '', JSON.stringify(r.detail));
    });
  });
  const sealAll = (rows: readonly DecisionRecord[]): string[] => rows.map((r) => (r.preview === '' ? '' : box.seal(r.preview, r.requestId)));
  const prune = db.prepare('DELETE FROM routing_decisions WHERE created_at < ?');

  port.on('message', (message: DecisionWriterMessage) => {
    if (message.kind === 'close') {
      db.close();
      port.postMessage({ kind: 'closed' } satisfies DecisionWriterReply);
      return;
    }
    let error: string | null = null;
    try {
      if (message.kind === 'rows') {
        const rows = unpack(message.packed) as DecisionRecord[];
        insertAll(rows, sealAll(rows));
      } else prune.run(message.before);
    } catch (err) {
      error = (err as Error).message;
    }
    port.postMessage({ kind: 'done', seq: message.seq, error } satisfies DecisionWriterReply);
  });
}
