/**
 * Migration: spend per hour, kept by a trigger on usage_events (issue 17). At start the budgets rebuilt
 * their spend with a full scan of the ledger, which grows without bound (a year of traffic made start-up
 * slower by the day); now they read this rollup: one row per project, endpoint, workspace and hour.
 * The trigger runs in the inserting transaction (the ledger's writer thread, or the journal replay), so the
 * rollup can never disagree with the rows, whoever writes them. Tokens and nano-dollars are counted as the
 * budgets count them (store/budgets-repo.ts). A turn with no workspace is kept under '' (a NULL in a primary
 * key would never match its own conflict). Existing rows are rolled up here, once.
 */
export const migrationUsageSpendRollup = `
CREATE TABLE usage_spend_hourly (
  project_id TEXT NOT NULL,
  endpoint_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  hour_start INTEGER NOT NULL,
  tokens INTEGER NOT NULL,
  nanos INTEGER NOT NULL,
  PRIMARY KEY (project_id, endpoint_id, workspace_id, hour_start)
) WITHOUT ROWID;

INSERT INTO usage_spend_hourly (project_id, endpoint_id, workspace_id, hour_start, tokens, nanos)
  SELECT project_id, endpoint_id, COALESCE(workspace_id, ''), CAST(created_at / 3600000 AS INTEGER) * 3600000,
    SUM(MAX(prompt_tokens + completion_tokens - cached_tokens, 0)), SUM(COALESCE(cost_nanos, 0))
  FROM usage_events GROUP BY 1, 2, 3, 4;

CREATE TRIGGER usage_events_spend_rollup AFTER INSERT ON usage_events BEGIN
  INSERT INTO usage_spend_hourly (project_id, endpoint_id, workspace_id, hour_start, tokens, nanos)
  VALUES (NEW.project_id, NEW.endpoint_id, COALESCE(NEW.workspace_id, ''), CAST(NEW.created_at / 3600000 AS INTEGER) * 3600000,
    MAX(NEW.prompt_tokens + NEW.completion_tokens - NEW.cached_tokens, 0), COALESCE(NEW.cost_nanos, 0))
  ON CONFLICT (project_id, endpoint_id, workspace_id, hour_start)
  DO UPDATE SET tokens = tokens + excluded.tokens, nanos = nanos + excluded.nanos;
END;
`;
