/**
 * The batches port on this instance's SQLite file: store/batches-repo.ts unchanged underneath (its
 * transactions, its outbox), behind promises. A claim is one synchronous transaction of the single
 * writer, so two claims never take the same line.
 */
import type { BatchesStore } from '../../core/store/batches-store.js';
import type { BatchesRepo } from '../batches-repo.js';

export function createSqliteBatchesStore(repo: BatchesRepo): BatchesStore {
  return {
    insert: async (batch) => repo.insert(batch),
    get: async (id) => repo.get(id),
    page: async (projectId, beforeSeq, limit) => repo.page(projectId, beforeSeq, limit),
    live: async () => repo.live(),
    activity: async (id) => repo.activity(id),
    counts: async (id) => repo.counts(id),
    line: async (id, idx) => repo.line(id, idx),
    doneLines: async (id) => repo.doneLines(id),
    validated: async (id, lines, now) => repo.validated(id, lines, now),
    claim: async (now) => repo.claim(now),
    settle: async (id, idx, outcome) => repo.settle(id, idx, outcome),
    defer: async (id, idx, notBefore) => repo.defer(id, idx, notBefore),
    interruptRunning: async (message) => repo.interruptRunning(message),
    move: async (id, from, to, now, extras) => repo.move(id, from, to, now, extras),
    setErrors: async (id, errors) => repo.setErrors(id, errors),
    expirePending: async (id, message) => repo.expirePending(id, message),
  };
}
