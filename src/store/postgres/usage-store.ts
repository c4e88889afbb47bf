/**
 * The usage store on PostgreSQL (issue 12, tables in migrations/004-usage.ts and 011), shared by every
 * replica: the programs of store/usage/ on the pool. A change of caps is announced on BUDGETS_TOPIC in its
 * transaction, so every replica reloads them (wiring/limits.ts).
 */
import type { UsageStore } from '../../core/store/usage-store.js';
import { postgresChangeNotices } from '../sql/change-notices.js';
import { createPostgresRunner } from '../sql/postgres-runner.js';
import { createUsageStore } from '../usage/usage-store.js';
import type { PgStore } from './pg-store.js';

export { BUDGETS_TOPIC } from '../usage/usage-budgets.js';

export function createPgUsageStore(store: PgStore): UsageStore {
  // The pool is the backend's, closed with it.
  return createUsageStore({ runner: createPostgresRunner(store), notices: postgresChangeNotices(store) });
}
