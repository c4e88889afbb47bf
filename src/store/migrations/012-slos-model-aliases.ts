/**
 * Issue 14: per-endpoint latency objectives (SLOs) and project model aliases (the Models API). Times are
 * Unix milliseconds. An SLO row holds at least one of its two objectives; an alias names a model id the
 * project serves (checked when written, not by a foreign key: model ids live in endpoints' config).
 */
export const migration012 = `
CREATE TABLE endpoint_slos (
  project_id TEXT NOT NULL REFERENCES projects(id),
  endpoint_id TEXT NOT NULL,
  ttft_ms REAL,
  tpot_ms REAL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, endpoint_id)
) WITHOUT ROWID;

CREATE TABLE model_aliases (
  project_id TEXT NOT NULL REFERENCES projects(id),
  alias TEXT NOT NULL,
  target TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, alias)
) WITHOUT ROWID;
`;
