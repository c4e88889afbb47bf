/**
 * The identity aggregate's tables (dashboard users and their sign-in state), declared once for both
 * backends: what every query in identity-store.ts is checked against at compile time. Created by SQLite
 * migration 015 and PostgreSQL migration 002-identity (015-dashboard-users.ts says what each column
 * holds); test/contract/store-schema.test.ts compares this declaration with both live schemas.
 */
import type { ProjectRole } from '../../core/store/identity-store.js';
import { integer, maybeText, nullable, text, time, type TablesOf } from '../sql/table-schema.js';


export const IDENTITY_SCHEMA = {
  dashboard_users: {
    id: text(),
    /** Unique whatever its case: SQLite COLLATE NOCASE, PostgreSQL a unique index on lower(email). */
    email: text(),
    name: text(),
    password_hash: maybeText(),
    totp_secret_sealed: maybeText(),
    totp_last_step: nullable(integer()),
    created_at: time(),
    updated_at: time(),
  },
  dashboard_user_roles: {
    user_id: text(),
    project_id: text(),
    role: text<ProjectRole>(),
    /** A JSON list of workspace ids; null: every workspace of the project. */
    workspace_ids: maybeText(),
  },
  dashboard_backup_codes: {
    user_id: text(),
    code_hash: text(),
    used_at: nullable(time()),
  },
  dashboard_sessions: {
    id_hash: text(),
    user_id: text(),
    stage: text<'totp' | 'full'>(),
    created_at: time(),
    last_seen_at: time(),
    ip: text(),
    user_agent: text(),
    next_path: maybeText(),
  },
  dashboard_identities: {
    provider_id: text(),
    subject: text(),
    user_id: text(),
    email: maybeText(),
    created_at: time(),
  },
  dashboard_oidc_flows: {
    id_hash: text(),
    provider_id: text(),
    state: text(),
    nonce: text(),
    code_verifier: text(),
    connect_user_id: maybeText(),
    next_path: maybeText(),
    created_at: time(),
  },
} as const;

/** Written only to revoke a user's keys (the catalog's table: store/catalog/ owns it). */
type KeysRevocation = {
  api_keys: { user_id: string | null; project_id: string; revoked_at: number | null; revoked_reason: string | null };
};

export type IdentityTables = TablesOf<typeof IDENTITY_SCHEMA> & KeysRevocation;
