/**
 * The decision log when decision rows live in PostgreSQL (issue 12): rows are queued on the request path
 * and written off it, every FLUSH_MS or BATCH_MAX rows, as one multi-row INSERT (store.insertDecisions).
 * The prompt excerpt is sealed here, before it leaves the process, as the store's writer thread does for
 * SQLite (store/decision-log.ts is that mode's log; this one keeps its interface).
 *
 * Batches are written one at a time, in order, so `flush()` (called by the management reads) waits for
 * everything recorded before it. A failed batch is reported, not retried: decision rows are telemetry.
 */
import type { RouterStore, StoredDecision } from '../core/store/router-store.js';
import type { DecisionLog, DecisionRecord } from '../store/decision-log.js';
import type { SecretBox } from '../store/secret-box.js';

const FLUSH_MS = 50;
const BATCH_MAX = 256;

export function createBatchedDecisionLog(store: RouterStore, box: SecretBox, onError: (message: string) => void): DecisionLog {
  let queue: DecisionRecord[] = [];
  let timer: NodeJS.Timeout | null = null;
  /** The last write handed to the store: the next one starts after it settles. */
  let tail: Promise<void> = Promise.resolve();

  const after = (step: () => Promise<void>): Promise<void> => {
    tail = tail.then(step).catch((err: unknown) => onError(err instanceof Error ? err.message : String(err)));
    return tail;
  };

  function flushQueue(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = null;
    if (queue.length === 0) return tail;
    const rows = queue.map(stored);
    queue = [];
    return after(() => store.insertDecisions(rows));
  }

  function stored(r: DecisionRecord): StoredDecision {
    return {
      requestId: r.requestId,
      projectId: r.projectId,
      workspaceId: r.workspaceId,
      createdAt: r.createdAt,
      routeReason: r.routeReason,
      // A turn with no text has an empty excerpt, stored as is (as the SQLite writer does).
      sealedPreview: r.preview === '' ? '' : box.seal(r.preview, r.requestId),
      detail: r.detail,
    };
  }

  return {
    record(row) {
      queue.push(row);
      if (queue.length >= BATCH_MAX) void flushQueue();
      else timer ??= setTimeout(() => void flushQueue(), FLUSH_MS);
    },
    flush: flushQueue,
    prune: (before) => after(() => store.pruneDecisions(before)),
    close: flushQueue,
  };
}
