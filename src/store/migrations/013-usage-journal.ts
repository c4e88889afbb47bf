/**
 * Migration: the usage journal's applied segments (store/usage-journal.ts). Every answered turn's usage row
 * is appended to a journal segment file before it waits for the batched insert; a segment's rows and its
 * marker are inserted in one transaction, so a segment replayed after a crash (or seen by two processes)
 * is applied exactly once. A marker is deleted once its file is gone.
 */
export const migrationUsageJournal = `
CREATE TABLE usage_journal_segments (
  segment TEXT PRIMARY KEY
) WITHOUT ROWID;
`;
