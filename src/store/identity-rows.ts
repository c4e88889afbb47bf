/**
 * The dashboard identity rows as both stores read them (SQLite: users-repo.ts and
 * dashboard-sessions-repo.ts, PostgreSQL: postgres/identity-store.ts): the same columns in both schemas
 * (migrations 015 and postgres/002-identity), one mapping to the port's records.
 */
import type { IdentityRecord, OidcFlowRecord, SessionRecord, UserRecord } from '../core/store/identity-store.js';

export interface UserRow {
  id: string;
  email: string;
  name: string;
  password_hash: string | null;
  totp_secret_sealed: string | null;
  totp_last_step: number | null;
  created_at: number;
  updated_at: number;
}

export interface SessionRow {
  id_hash: string;
  user_id: string;
  stage: 'totp' | 'full';
  created_at: number;
  last_seen_at: number;
  ip: string;
  user_agent: string;
  next_path: string | null;
}

export interface FlowRow {
  id_hash: string;
  provider_id: string;
  state: string;
  nonce: string;
  code_verifier: string;
  connect_user_id: string | null;
  next_path: string | null;
  created_at: number;
}

export interface IdentityRow {
  provider_id: string;
  subject: string;
  user_id: string;
  email: string | null;
  created_at: number;
}

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
