/**
 * PostgreSQL: the Requests page's columns of a turn, as SQLite's migration 018 (what each holds is said
 * there). The project/time index is replaced by one ending in `id`, so the page's keyset (created_at, id),
 * newest first, is read from the index in order (SQLite's index carries the rowid already).
 */
export const pgMigrationUsageRequestDetail = `
ALTER TABLE usage_events ADD COLUMN ttft_ms DOUBLE PRECISION;
ALTER TABLE usage_events ADD COLUMN error_code TEXT;
ALTER TABLE usage_events ADD COLUMN upstream_server TEXT;
ALTER TABLE usage_events ADD COLUMN retries INTEGER;
CREATE INDEX usage_events_project_time_id ON usage_events (project_id, created_at, id);
DROP INDEX usage_events_project_time;
`;
