/**
 * Migration: dashboard users and their sign-in state (issue 22; SPEC Authentication 10, 12-16).
 *
 * - Passwords are scrypt hashes (dashboard/auth/passwords.ts), TOTP secrets sealed by the store's secret box
 *   with the user id as associated data, backup codes and session ids SHA-256 hashes: a copy of this file
 *   signs nobody in.
 * - `dashboard_user_roles.workspace_ids` NULL: the user reads every workspace of the project; a JSON list
 *   otherwise. A user-owned API key without a list of its own reaches exactly these (store/keys-repo.ts).
 * - A session row with `stage = 'totp'` is the 5-minute window between the password and the second factor;
 *   only `stage = 'full'` opens pages.
 * - Deleting a user deletes these rows (ON DELETE CASCADE); the user's API keys are revoked in the same
 *   transaction (store/users-repo.ts) and answer 401 key_inactive.
 */
export const migrationDashboardUsers = `
CREATE TABLE dashboard_users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL UNIQUE COLLATE NOCASE,
  name TEXT NOT NULL,
  password_hash TEXT,
  totp_secret_sealed TEXT,
  totp_last_step INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

CREATE TABLE dashboard_user_roles (
  user_id TEXT NOT NULL REFERENCES dashboard_users(id) ON DELETE CASCADE,
  project_id TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
  workspace_ids TEXT,
  PRIMARY KEY (user_id, project_id)
) WITHOUT ROWID;

CREATE TABLE dashboard_backup_codes (
  user_id TEXT NOT NULL REFERENCES dashboard_users(id) ON DELETE CASCADE,
  code_hash TEXT NOT NULL,
  used_at INTEGER,
  PRIMARY KEY (user_id, code_hash)
) WITHOUT ROWID;

CREATE TABLE dashboard_sessions (
  id_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES dashboard_users(id) ON DELETE CASCADE,
  stage TEXT NOT NULL CHECK (stage IN ('totp', 'full')),
  created_at INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL,
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
  created_at INTEGER NOT NULL,
  PRIMARY KEY (provider_id, subject)
) WITHOUT ROWID;
CREATE INDEX dashboard_identities_by_user ON dashboard_identities (user_id);

CREATE TABLE dashboard_oidc_flows (
  id_hash TEXT PRIMARY KEY,
  provider_id TEXT NOT NULL,
  state TEXT NOT NULL,
  nonce TEXT NOT NULL,
  code_verifier TEXT NOT NULL,
  connect_user_id TEXT,
  next_path TEXT,
  created_at INTEGER NOT NULL
);
`;
