/**
 * PostgreSQL: the usage ledger, its spend rollup, stored budgets; SQLite's migrations 002, 003, 006, 013
 * and 014 in one (store/migrations/ says what each column holds).
 *
 * - usage_events: written in batches by each replica's writer thread (store/usage-pg-writer.ts); read
 *   by project and time range through usage_events_project_time, as in SQLite.
 * - usage_journal_segments: a journal segment's marker, inserted with its rows, so a segment written by
 *   the writer and replayed after a crash, or replayed by two replicas, is stored once. `segment` names
 *   are globally unique (they carry the writing instance's random id). Markers are dropped once their
 *   file is gone.
 * - usage_spend_hourly: spend per project, endpoint, workspace ('' for none) and hour, kept by a
 *   statement trigger over the inserted rows (one grouped upsert a batch, not one a row), in the
 *   inserting transaction, so it never disagrees with the ledger. The groups are upserted in key order:
 *   two replicas' batches then lock rollup rows in the same order and cannot deadlock.
 * - budgets: no foreign key to projects (001-catalog is another group).
 */
export const pgMigrationUsage = `
CREATE TABLE usage_events (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  request_id TEXT NOT NULL,
  project_id TEXT NOT NULL,
  workspace_id TEXT,
  endpoint_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  route TEXT NOT NULL,
  prompt_tokens BIGINT NOT NULL,
  completion_tokens BIGINT NOT NULL,
  cached_tokens BIGINT NOT NULL,
  reasoning_tokens BIGINT,
  service_tier TEXT NOT NULL,
  tier_multiplier DOUBLE PRECISION NOT NULL,
  status TEXT NOT NULL,
  usage_source TEXT NOT NULL,
  latency_ms DOUBLE PRECISION NOT NULL,
  created_at BIGINT NOT NULL,
  model TEXT,
  cost_nanos BIGINT
);
CREATE INDEX usage_events_project_time ON usage_events (project_id, created_at);

CREATE TABLE usage_journal_segments (
  segment TEXT PRIMARY KEY
);

CREATE TABLE usage_spend_hourly (
  project_id TEXT NOT NULL,
  endpoint_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  hour_start BIGINT NOT NULL,
  tokens BIGINT NOT NULL,
  nanos BIGINT NOT NULL,
  PRIMARY KEY (project_id, endpoint_id, workspace_id, hour_start)
);

CREATE FUNCTION usage_events_spend_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO usage_spend_hourly AS s (project_id, endpoint_id, workspace_id, hour_start, tokens, nanos)
    SELECT project_id, endpoint_id, COALESCE(workspace_id, ''), (created_at / 3600000) * 3600000,
      SUM(GREATEST(prompt_tokens + completion_tokens - cached_tokens, 0)), SUM(COALESCE(cost_nanos, 0))
    FROM inserted GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
  ON CONFLICT (project_id, endpoint_id, workspace_id, hour_start)
  DO UPDATE SET tokens = s.tokens + excluded.tokens, nanos = s.nanos + excluded.nanos;
  RETURN NULL;
END
$$;
CREATE TRIGGER usage_events_spend_rollup AFTER INSERT ON usage_events
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION usage_events_spend_rollup();

CREATE TABLE budgets (
  project_id TEXT NOT NULL,
  level TEXT NOT NULL CHECK (level IN ('endpoint', 'workspace')),
  target_id TEXT NOT NULL,
  hourly_tokens BIGINT,
  daily_tokens BIGINT,
  hard_cap_tokens BIGINT,
  hourly_cents BIGINT,
  daily_cents BIGINT,
  hard_cap_cents BIGINT,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (project_id, level, target_id)
);
`;
