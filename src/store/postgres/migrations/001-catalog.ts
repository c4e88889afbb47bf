/**
 * PostgreSQL: projects, workspaces, endpoints, API keys and their values' hashes, as SQLite's migrations
 * 001 and 005 (store/migrations/ say what each column holds). JSON lists and objects are TEXT, read and
 * written whole as in SQLite, so one row mapper serves both stores; flags stay 0/1 integers for the same
 * reason. A key's owner (`user_id`) is not a foreign key: dashboard users belong to the identity group
 * (002), and the credential query joins them.
 */
export const pgMigrationCatalog = `
CREATE TABLE projects (
  id TEXT PRIMARY KEY,
  uuid TEXT NOT NULL UNIQUE,
  slug TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  plan TEXT NOT NULL,
  requests_per_minute BIGINT NOT NULL,
  tokens_per_minute BIGINT NOT NULL,
  default_workspace_id TEXT,
  default_workspace_set_at BIGINT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);

CREATE TABLE workspaces (
  project_id TEXT NOT NULL REFERENCES projects(id),
  id TEXT NOT NULL,
  name TEXT NOT NULL,
  routing_mode TEXT,
  routing_mode_default TEXT NOT NULL,
  routing_mode_set_at BIGINT,
  pinned_endpoint_id TEXT,
  operational INTEGER NOT NULL DEFAULT 0 CHECK (operational IN (0, 1)),
  zero_data_retention INTEGER NOT NULL CHECK (zero_data_retention IN (0, 1)),
  created_at BIGINT NOT NULL,
  deleted_at BIGINT,
  PRIMARY KEY (project_id, id)
);

CREATE TABLE endpoints (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id),
  slug TEXT NOT NULL,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  tier TEXT NOT NULL,
  status TEXT NOT NULL,
  region TEXT NOT NULL,
  workspace_ids TEXT NOT NULL,
  model TEXT NOT NULL,
  upstream TEXT NOT NULL,
  router TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  deleted_at BIGINT
);
CREATE UNIQUE INDEX endpoints_live_slug ON endpoints (project_id, slug) WHERE deleted_at IS NULL;

CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id),
  name TEXT,
  prefix TEXT NOT NULL,
  scopes TEXT NOT NULL,
  allowed_ips TEXT NOT NULL,
  blocked_ips TEXT NOT NULL,
  expires_at BIGINT,
  quota_requests BIGINT NOT NULL,
  quota_window BIGINT NOT NULL,
  endpoint_id TEXT,
  allowed_workspace_ids TEXT,
  user_id TEXT,
  source TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  revoked_at BIGINT,
  revoked_reason TEXT
);
CREATE INDEX api_keys_project ON api_keys (project_id);
CREATE INDEX api_keys_user ON api_keys (user_id) WHERE user_id IS NOT NULL;

-- A key has one current value and, after a rotation, old values valid until valid_until.
CREATE TABLE api_key_secrets (
  hash TEXT PRIMARY KEY,
  key_id TEXT NOT NULL REFERENCES api_keys(id),
  created_at BIGINT NOT NULL,
  valid_until BIGINT
);
CREATE INDEX api_key_secrets_key ON api_key_secrets (key_id);
`;
