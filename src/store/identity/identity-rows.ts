/** The identity rows (identity-tables.ts) as the port's records. */
import type { Selectable } from 'kysely';
import type { IdentityRecord, OidcFlowRecord, SessionRecord, UserRecord, UserRole } from '../../core/store/identity-store.js';
import { fromNullableJson } from '../json-column.js';
import type { IdentityTables } from './identity-tables.js';

export type UserRow = Selectable<IdentityTables['dashboard_users']>;
export type SessionRow = Selectable<IdentityTables['dashboard_sessions']>;
export type FlowRow = Selectable<IdentityTables['dashboard_oidc_flows']>;
export type IdentityRow = Selectable<IdentityTables['dashboard_identities']>;
export type RoleRow = Pick<Selectable<IdentityTables['dashboard_user_roles']>, 'project_id' | 'role' | 'workspace_ids'>;

export const toUser = (r: UserRow): UserRecord => ({
  id: r.id,
  email: r.email,
  name: r.name,
  passwordHash: r.password_hash,
  totpSealed: r.totp_secret_sealed,
  totpLastStep: r.totp_last_step,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export const toSession = (r: SessionRow): SessionRecord => ({
  idHash: r.id_hash,
  userId: r.user_id,
  stage: r.stage,
  createdAt: r.created_at,
  lastSeenAt: r.last_seen_at,
  ip: r.ip,
  userAgent: r.user_agent,
  nextPath: r.next_path,
});

export const toFlow = (r: FlowRow): OidcFlowRecord => ({
  idHash: r.id_hash,
  providerId: r.provider_id,
  state: r.state,
  nonce: r.nonce,
  codeVerifier: r.code_verifier,
  connectUserId: r.connect_user_id,
  nextPath: r.next_path,
  createdAt: r.created_at,
});

export const toIdentity = (r: IdentityRow): IdentityRecord => ({ providerId: r.provider_id, subject: r.subject, userId: r.user_id, email: r.email, createdAt: r.created_at });

export const toRole = (r: RoleRow): UserRole => ({ projectId: r.project_id, role: r.role, workspaceIds: fromNullableJson<string[]>(r.workspace_ids) });
