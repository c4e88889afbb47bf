/** One row per model turn: what billing and the token limiter read. */
export const migration002 = `
CREATE TABLE usage_events (
  id INTEGER PRIMARY KEY,
  request_id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL,
  workspace_id TEXT,
  endpoint_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  route TEXT NOT NULL,
  prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  cached_tokens INTEGER NOT NULL,
  reasoning_tokens INTEGER,
  service_tier TEXT NOT NULL,
  tier_multiplier REAL NOT NULL,
  status TEXT NOT NULL,
  usage_source TEXT NOT NULL,
  latency_ms REAL NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX usage_events_project_time ON usage_events(project_id, created_at);
`;
