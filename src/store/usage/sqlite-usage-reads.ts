/**
 * The ledger's reads on SQLite, synchronously, for the callers that are (`switchboard usage --db`,
 * cli-usage.ts). The programs are usage-reads.ts's.
 */
import type { RequestsPage, RequestsQuery, UsagePage, UsageQuery } from '../../core/store/usage-store.js';
import type { Db } from '../db.js';
import { createSqliteRunner } from '../sql/sqlite-runner.js';
import { usageReads } from './usage-reads.js';

export interface SqliteUsageReads {
  page(q: UsageQuery): UsagePage;
  requests(q: RequestsQuery): RequestsPage;
  /** The statement of a page and its arguments, for checking its query plan. */
  pageStatement(q: UsageQuery): { readonly sql: string; readonly parameters: readonly unknown[] };
}

export function createSqliteUsageReads(db: Db): SqliteUsageReads {
  const runner = createSqliteRunner(db);
  const reads = usageReads('sqlite');
  return {
    page: (q) => runner.readSync(reads.page(q)),
    requests: (q) => runner.readSync(reads.requests(q)),
    pageStatement: (q) => reads.pageQuery(q).compile(),
  };
}
