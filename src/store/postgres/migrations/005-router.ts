/**
 * PostgreSQL: router settings and rules, SLOs, model aliases, routing decisions, as SQLite's migrations
 * 005 and 012 (store/migrations/ say what each column holds). JSON values are TEXT, read and written whole
 * as in SQLite: JSONB would reorder the keys of the rules and decision rows the API returns. `seq` orders
 * decisions created in the same millisecond (SQLite's rowid). Project ids are not foreign keys: projects
 * belong to the catalog group. Profile embeddings stay in each instance's SQLite file (a cache).
 */
export const pgMigrationRouter = `
CREATE TABLE semantic_router_settings (
  project_id TEXT PRIMARY KEY,
  settings TEXT NOT NULL,
  rules TEXT NOT NULL,
  updated_at BIGINT NOT NULL
);

CREATE TABLE endpoint_slos (
  project_id TEXT NOT NULL,
  endpoint_id TEXT NOT NULL,
  ttft_ms DOUBLE PRECISION,
  tpot_ms DOUBLE PRECISION,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (project_id, endpoint_id)
);

CREATE TABLE model_aliases (
  project_id TEXT NOT NULL,
  alias TEXT NOT NULL,
  target TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (project_id, alias)
);

CREATE TABLE routing_decisions (
  seq BIGSERIAL PRIMARY KEY,
  request_id TEXT NOT NULL,
  project_id TEXT NOT NULL,
  workspace_id TEXT,
  created_at BIGINT NOT NULL,
  route_reason TEXT NOT NULL,
  query_preview TEXT NOT NULL,
  detail TEXT NOT NULL
);
CREATE INDEX routing_decisions_project_time ON routing_decisions (project_id, created_at);
CREATE INDEX routing_decisions_time ON routing_decisions (created_at);
`;
