/**
 * The usage store on the instance's SQLite file (the embedded default): the programs of store/usage/ on
 * this connection. The gateway reads its totals through the reader thread (usage-reader.ts, passed as
 * `totals`) so a long report never blocks the event loop; without one (tests, one-shot commands) they are
 * read on the caller's thread.
 */
import type { RequestRowsSource, UsageStore, UsageTotalsSource } from '../../core/store/usage-store.js';
import type { Db } from '../db.js';
import { sqliteChangeNotices } from '../sql/change-notices.js';
import { createSqliteRunner } from '../sql/sqlite-runner.js';
import { createUsageStore } from '../usage/usage-store.js';

export interface SqliteUsageStoreOptions {
  /** The reader thread (usage-reader.ts): totals and the Requests page's rows. */
  readonly totals?: UsageTotalsSource & Pick<RequestRowsSource, 'requests'> & { close?(): Promise<void> };
}

export function createSqliteUsageStore(db: Db, options: SqliteUsageStoreOptions = {}): UsageStore {
  return createUsageStore({ runner: createSqliteRunner(db), notices: sqliteChangeNotices, ...(options.totals ? { reads: options.totals } : {}) });
}
