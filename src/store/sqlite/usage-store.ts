/**
 * The usage store on the instance's SQLite file (the embedded default): the existing synchronous repos
 * (usage-insert.ts, usage-totals.ts, budgets-repo.ts) behind the asynchronous port. The gateway reads its
 * totals through the reader thread (usage-reader.ts, passed as `totals`) so a long report never blocks the
 * event loop; without one (tests, one-shot commands) they are read on the caller's thread.
 */
import type { LedgerRow, RequestRowsSource, UsageStore, UsageTotalsSource } from '../../core/store/usage-store.js';
import { createBudgetsRepo } from '../budgets-repo.js';
import { writeTransaction, type Db } from '../db.js';
import { createMarkerForgetter, createSegmentApplier } from '../usage-insert.js';
import { createSqliteRequests } from '../usage-requests.js';
import { createUsageTotals } from '../usage-totals.js';

export interface SqliteUsageStoreOptions {
  /** The reader thread (usage-reader.ts): totals and the Requests page's rows. */
  readonly totals?: UsageTotalsSource & Pick<RequestRowsSource, 'requests'> & { close?(): Promise<void> };
}

export function createSqliteUsageStore(db: Db, options: SqliteUsageStoreOptions = {}): UsageStore {
  const budgets = createBudgetsRepo(db);
  const local = createUsageTotals(db);
  const rows = createSqliteRequests(db);
  const totals = options.totals ?? { page: async (q) => local.page(q), requests: async (q) => rows.requests(q) };
  const apply = createSegmentApplier(db);
  const storeSegment = writeTransaction(db, (segment: string, rows: readonly LedgerRow[]) => (apply(segment, rows) ? rows.length : 0));
  const forget = writeTransaction(db, createMarkerForgetter(db));
  return {
    page: (q) => totals.page(q),
    requests: (q) => totals.requests(q),
    // One primary-key lookup: on the caller's thread.
    request: async (projectId, id) => rows.request(projectId, id),
    listBudgets: async () => budgets.list(),
    putBudget: async (b, now) => budgets.put(b, now),
    removeBudget: async (projectId, level, targetId) => budgets.remove(projectId, level, targetId),
    storeSegment: async (segment, rows) => storeSegment(segment, rows),
    forgetSegments: async (segments) => forget(segments),
    spend: async (level, since) => budgets.spend(level, since),
    close: async () => options.totals?.close?.(),
  };
}
