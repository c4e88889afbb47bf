/**
 * Migration: the hourly spend rollup is kept by the ledger's insert, a batch at a time, instead of a
 * trigger a row at a time (issue 35). The trigger of migration 014 ran one upsert per inserted row: about
 * a quarter of the writer thread's time per row (2 of ~8 us, bench/RESULTS.md), where a batch of a few
 * hundred turns of one key touches one or two rollup rows. The ledger's one insert program on SQLite
 * (store/usage/usage-ledger-writes.ts) now adds each batch's rows up per project, endpoint, workspace and
 * hour and upserts the sums, in the same transaction as the rows, so the rollup still never disagrees
 * with them: the writer thread, the journal replay and the usage store all insert through that program.
 * PostgreSQL keeps its statement-level trigger (one grouped upsert a statement already).
 */
export const migrationUsageRollupByBatch = `
DROP TRIGGER IF EXISTS usage_events_spend_rollup;
`;
