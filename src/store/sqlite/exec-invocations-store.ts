/**
 * The exec invocations port on this instance's SQLite file: invocation-store.ts
 * unchanged underneath (its guarded writes, its transactions, its outbox), behind promises. A claim's
 * send runs inside the synchronous write transaction, as before.
 */
import type { ExecInvocationsStore } from '../../core/store/exec-invocations-store.js';
import type { InvocationStore } from './invocation-store.js';

export function createSqliteExecInvocationsStore(store: InvocationStore): ExecInvocationsStore {
  return {
    create: async (inv, approval, events, idem, now) => store.create(inv, approval, events, idem, now),
    idempotencyKey: async (projectId, key, now) => store.idempotencyKey(projectId, key, now),
    commit: async (change) => store.commit(change),
    claim: async (change, send) => store.claim(change, send),
    invocation: async (id) => store.invocation(id),
    approval: async (id) => store.approval(id),
    listInvocations: async (projectId, q) => store.listInvocations(projectId, q),
    listApprovals: async (projectId, q) => store.listApprovals(projectId, q),
    dueInvocations: async (now, limit) => store.dueInvocations(now, limit),
    dueApprovals: async (now, limit) => store.dueApprovals(now, limit),
    withStatus: async (status, afterSeq, limit) => store.withStatus(status, afterSeq, limit),
    failAbandoned: async (status, afterSeq, limit, fail) =>
      store.atomically(() => {
        const batch = store.abandoned(status, afterSeq, limit);
        for (const { invocation } of batch) {
          const change = fail(invocation);
          if (change) store.commit(change);
        }
        return batch;
      }),
    activeOfAgent: async (agentId) => store.activeOfAgent(agentId),
    statusesOf: async (ids) => store.statusesOf(ids),
    dropExpiredKeys: async (now) => store.dropExpiredKeys(now),
  };
}
