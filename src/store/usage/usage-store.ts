/**
 * The usage port (core/store/usage-store.ts), written once for SQLite and PostgreSQL (issue 33): each method
 * a program of usage-ledger-writes.ts, usage-reads.ts or usage-budgets.ts, run by its backend's runner.
 *
 * The totals and the Requests page's rows may be read elsewhere (`reads`): SQLite's gateway reads them on
 * the usage reader thread (usage-reader.ts), so a long report never blocks the event loop; without one
 * (PostgreSQL, tests, one-shot commands) they run on the runner.
 */
import type { RequestRowsSource, UsageStore, UsageTotalsSource } from '../../core/store/usage-store.js';
import type { ChangeNotices } from '../sql/change-notices.js';
import type { SqlRunner } from '../sql/sql-runner.js';
import { usageBudgets } from './usage-budgets.js';
import { forgetSegments, storeSegment } from './usage-ledger-writes.js';
import { usageReads } from './usage-reads.js';

export interface UsageStoreDeps {
  readonly runner: SqlRunner;
  readonly notices: Pick<ChangeNotices, 'notify'>;
  /** Where the totals and the Requests page are read instead of the runner (SQLite's reader thread). */
  readonly reads?: UsageTotalsSource & Pick<RequestRowsSource, 'requests'> & { close?(): Promise<void> };
}

export function createUsageStore({ runner, notices, reads: elsewhere }: UsageStoreDeps): UsageStore {
  const reads = usageReads(runner.dialect);
  const budgets = usageBudgets(runner.dialect, notices);
  return {
    page: (q) => (elsewhere ? elsewhere.page(q) : runner.read(reads.page(q))),
    requests: (q) => (elsewhere ? elsewhere.requests(q) : runner.read(reads.requests(q))),
    // One primary-key lookup: on the runner, wherever the pages are read.
    request: (projectId, id) => runner.read(reads.request(projectId, id)),
    routedByEndpoint: (projectId, since) => runner.read(reads.routedByEndpoint(projectId, since)),
    listBudgets: () => runner.read(budgets.list()),
    putBudget: (b, now) => runner.write(budgets.put(b, now)),
    removeBudget: (projectId, level, targetId) => runner.write(budgets.remove(projectId, level, targetId)),
    storeSegment: (segment, rows) => runner.write(storeSegment(segment, rows)),
    forgetSegments: (segments) => runner.write(forgetSegments(segments)),
    spend: (level, since) => runner.read(budgets.spend(level, since)),
    close: async () => elsewhere?.close?.(),
  };
}
