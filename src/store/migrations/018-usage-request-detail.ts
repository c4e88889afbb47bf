/**
 * Migration: what the dashboard's Requests page shows of a turn beyond its tokens and cost (issue 34).
 *
 * - `ttft_ms`: time from the request's arrival to the first byte of a streamed answer (NULL: not streamed,
 *   or nothing came).
 * - `error_code`: the error catalogue code the client got, for a turn whose status is error or timeout.
 * - `upstream_server`: the base URL of the pool's server that answered (or was last tried), without any
 *   user-info part; NULL for rows from before this migration and turns no server was picked for.
 * - `retries`: how many times the turn was sent once more to another server (0 or 1, docs/decisions.md
 *   "Upstream pools, health and failover"); NULL before this migration.
 *
 * No new index: the page reads one project's rows newest first through usage_events_project_time, whose
 * entries end in the rowid (`id`), so the keyset (created_at, id) walks the index; the detail is one
 * primary-key lookup.
 */
export const migrationUsageRequestDetail = `
ALTER TABLE usage_events ADD COLUMN ttft_ms REAL;
ALTER TABLE usage_events ADD COLUMN error_code TEXT;
ALTER TABLE usage_events ADD COLUMN upstream_server TEXT;
ALTER TABLE usage_events ADD COLUMN retries INTEGER;
`;
