/**
 * PostgreSQL: dashboard users and their sign-in state, as SQLite's migration 015 (store/migrations/
 * 015-dashboard-users.ts says what each column holds). E-mail addresses are unique whatever their case
 * (SQLite's COLLATE NOCASE): a unique index on lower(email), which lookups must use. The API keys a user
 * owns (001-catalog) join these tables by user id; deleting a user revokes them in the same transaction.
 */
export const pgMigrationIdentity = `
CREATE TABLE dashboard_users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL,
  name TEXT NOT NULL,
  password_hash TEXT,
  totp_secret_sealed TEXT,
  totp_last_step BIGINT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX dashboard_users_email ON dashboard_users (lower(email));

CREATE TABLE dashboard_user_roles (
  user_id TEXT NOT NULL REFERENCES dashboard_users(id) ON DELETE CASCADE,
  project_id TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
  workspace_ids TEXT,
  PRIMARY KEY (user_id, project_id)
);

CREATE TABLE dashboard_backup_codes (
  user_id TEXT NOT NULL REFERENCES dashboard_users(id) ON DELETE CASCADE,
  code_hash TEXT NOT NULL,
  used_at BIGINT,
  PRIMARY KEY (user_id, code_hash)
);

CREATE TABLE dashboard_sessions (
  id_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES dashboard_users(id) ON DELETE CASCADE,
  stage TEXT NOT NULL CHECK (stage IN ('totp', 'full')),
  created_at BIGINT NOT NULL,
  last_seen_at BIGINT NOT NULL,
  ip TEXT NOT NULL,
  user_agent TEXT NOT NULL,
  next_path TEXT
);
CREATE INDEX dashboard_sessions_by_user ON dashboard_sessions (user_id);

CREATE TABLE dashboard_identities (
  provider_id TEXT NOT NULL,
  subject TEXT NOT NULL,
  user_id TEXT NOT NULL REFERENCES dashboard_users(id) ON DELETE CASCADE,
  email TEXT,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (provider_id, subject)
);
CREATE INDEX dashboard_identities_by_user ON dashboard_identities (user_id);

CREATE TABLE dashboard_oidc_flows (
  id_hash TEXT PRIMARY KEY,
  provider_id TEXT NOT NULL,
  state TEXT NOT NULL,
  nonce TEXT NOT NULL,
  code_verifier TEXT NOT NULL,
  connect_user_id TEXT,
  next_path TEXT,
  created_at BIGINT NOT NULL
);
`;
