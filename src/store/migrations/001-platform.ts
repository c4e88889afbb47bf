/** Projects, workspaces, endpoints and API keys. Times are Unix milliseconds; lists are JSON arrays. */
export const migration001 = `
CREATE TABLE projects (
  id TEXT PRIMARY KEY,
  uuid TEXT NOT NULL UNIQUE,
  slug TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  plan TEXT NOT NULL,
  requests_per_minute INTEGER NOT NULL,
  tokens_per_minute INTEGER NOT NULL,
  default_workspace_id TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

CREATE TABLE workspaces (
  project_id TEXT NOT NULL REFERENCES projects(id),
  id TEXT NOT NULL,
  name TEXT NOT NULL,
  routing_mode TEXT,
  routing_mode_default TEXT NOT NULL,
  zero_data_retention INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  deleted_at INTEGER,
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
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  deleted_at INTEGER
);
CREATE UNIQUE INDEX endpoints_live_slug ON endpoints(project_id, slug) WHERE deleted_at IS NULL;

CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id),
  name TEXT,
  prefix TEXT NOT NULL,
  scopes TEXT NOT NULL,
  allowed_ips TEXT NOT NULL,
  blocked_ips TEXT NOT NULL,
  expires_at INTEGER,
  quota_requests INTEGER NOT NULL,
  quota_window INTEGER NOT NULL,
  endpoint_id TEXT,
  allowed_workspace_ids TEXT,
  user_id TEXT,
  source TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  revoked_at INTEGER,
  revoked_reason TEXT
);
CREATE INDEX api_keys_project ON api_keys(project_id);

-- A key has one current value and, after a rotation, old values valid until valid_until.
CREATE TABLE api_key_secrets (
  hash TEXT PRIMARY KEY,
  key_id TEXT NOT NULL REFERENCES api_keys(id),
  created_at INTEGER NOT NULL,
  valid_until INTEGER
);
CREATE INDEX api_key_secrets_key ON api_key_secrets(key_id);
`;
