/**
 * Dashboard users, their project roles, backup codes and connected identity providers (migration 015).
 * Secrets arrive here already hashed or sealed (dashboard/auth/): this file is the SQL.
 */
import type { IdentityRecord, ProjectRole, UserRecord, UserRole } from '../core/store/identity-store.js';
import { toIdentity, toUser, type UserRow } from './identity-rows.js';
import { writeTransaction, type Db } from './db.js';
import { fromNullableJson, toJson } from './json-column.js';

export type { IdentityRecord, ProjectRole, UserRecord, UserRole };

export function createUsersRepo(db: Db) {
  const insertUser = db.prepare(
    'INSERT INTO dashboard_users (id, email, name, password_hash, created_at, updated_at) VALUES (@id, @email, @name, @passwordHash, @now, @now)',
  );
  const upsertRole = db.prepare(`
    INSERT INTO dashboard_user_roles (user_id, project_id, role, workspace_ids) VALUES (@userId, @projectId, @role, @workspaceIds)
    ON CONFLICT (user_id, project_id) DO UPDATE SET role = excluded.role, workspace_ids = excluded.workspace_ids`);
  const byId = db.prepare<[string], UserRow>('SELECT * FROM dashboard_users WHERE id = ?');
  const byEmail = db.prepare<[string], UserRow>('SELECT * FROM dashboard_users WHERE email = ?');
  const all = db.prepare<[], UserRow>('SELECT * FROM dashboard_users ORDER BY created_at, id');
  const rolesOf = db.prepare<[string], { project_id: string; role: ProjectRole; workspace_ids: string | null }>(
    'SELECT project_id, role, workspace_ids FROM dashboard_user_roles WHERE user_id = ? ORDER BY project_id',
  );
  const revokeKeysOf = db.prepare(
    "UPDATE api_keys SET revoked_at = @now, revoked_reason = 'user_deleted' WHERE user_id = @userId AND revoked_at IS NULL",
  );
  const deleteUser = db.prepare('DELETE FROM dashboard_users WHERE id = ?');
  const deleteRole = db.prepare('DELETE FROM dashboard_user_roles WHERE user_id = @userId AND project_id = @projectId');
  const revokeProjectKeysOf = db.prepare(
    "UPDATE api_keys SET revoked_at = @now, revoked_reason = 'member_removed' WHERE user_id = @userId AND project_id = @projectId AND revoked_at IS NULL",
  );
  const setPassword = db.prepare('UPDATE dashboard_users SET password_hash = @hash, updated_at = @now WHERE id = @userId');
  const deleteSessionsOf = db.prepare('DELETE FROM dashboard_sessions WHERE user_id = ?');
  const setTotp = db.prepare('UPDATE dashboard_users SET totp_secret_sealed = @sealed, totp_last_step = NULL, updated_at = @now WHERE id = @userId');
  // The compare-and-set that makes a TOTP code single-use (RFC 6238 section 5.2), even across processes.
  const advanceStep = db.prepare(
    'UPDATE dashboard_users SET totp_last_step = @step WHERE id = @userId AND (totp_last_step IS NULL OR totp_last_step < @step)',
  );
  const deleteCodes = db.prepare('DELETE FROM dashboard_backup_codes WHERE user_id = ?');
  const insertCode = db.prepare('INSERT OR IGNORE INTO dashboard_backup_codes (user_id, code_hash, used_at) VALUES (?, ?, NULL)');
  const useCode = db.prepare('UPDATE dashboard_backup_codes SET used_at = @now WHERE user_id = @userId AND code_hash = @hash AND used_at IS NULL');
  const unusedCodes = db.prepare<[string], { n: number }>('SELECT COUNT(*) AS n FROM dashboard_backup_codes WHERE user_id = ? AND used_at IS NULL');
  const insertIdentity = db.prepare(
    'INSERT INTO dashboard_identities (provider_id, subject, user_id, email, created_at) VALUES (@providerId, @subject, @userId, @email, @now)',
  );
  const identity = db.prepare<[string, string], { provider_id: string; subject: string; user_id: string; email: string | null; created_at: number }>(
    'SELECT * FROM dashboard_identities WHERE provider_id = ? AND subject = ?',
  );
  const identitiesOf = db.prepare<[string], { provider_id: string; subject: string; user_id: string; email: string | null; created_at: number }>(
    'SELECT * FROM dashboard_identities WHERE user_id = ? ORDER BY provider_id',
  );
  const deleteIdentity = db.prepare('DELETE FROM dashboard_identities WHERE user_id = ? AND provider_id = ?');
  const newestTotp = db.prepare<[], { sealed: string; associated: string }>(
    'SELECT totp_secret_sealed AS sealed, id AS associated FROM dashboard_users WHERE totp_secret_sealed IS NOT NULL ORDER BY rowid DESC LIMIT 1',
  );

  return {
    create: writeTransaction(
      db,
      (u: { id: string; email: string; name: string; passwordHash: string | null; now: number }, roles: readonly UserRole[]): void => {
        insertUser.run(u);
        for (const r of roles) upsertRole.run({ userId: u.id, projectId: r.projectId, role: r.role, workspaceIds: r.workspaceIds ? toJson(r.workspaceIds) : null });
      },
    ),
    setRole(userId: string, r: UserRole): void {
      upsertRole.run({ userId, projectId: r.projectId, role: r.role, workspaceIds: r.workspaceIds ? toJson(r.workspaceIds) : null });
    },
    removeRole: writeTransaction(db, (userId: string, projectId: string, now: number): { removed: boolean; keysRevoked: number } => {
      const removed = deleteRole.run({ userId, projectId }).changes > 0;
      const keysRevoked = removed ? revokeProjectKeysOf.run({ userId, projectId, now }).changes : 0;
      return { removed, keysRevoked };
    }),
    byId: (id: string): UserRecord | null => {
      const r = byId.get(id);
      return r ? toUser(r) : null;
    },
    byEmail: (email: string): UserRecord | null => {
      const r = byEmail.get(email);
      return r ? toUser(r) : null;
    },
    list: (): UserRecord[] => all.all().map(toUser),
    roles: (userId: string): UserRole[] =>
      rolesOf.all(userId).map((r) => ({ projectId: r.project_id, role: r.role, workspaceIds: fromNullableJson<string[]>(r.workspace_ids) })),
    /** The user's keys are revoked in the same transaction (SPEC "API key": owning user deleted -> 401 key_inactive). */
    delete: writeTransaction(db, (userId: string, now: number): { deleted: boolean; keysRevoked: number } => {
      const keysRevoked = revokeKeysOf.run({ userId, now }).changes;
      return { deleted: deleteUser.run(userId).changes > 0, keysRevoked };
    }),
    /** SPEC Authentication 14: a password change or an admin reset ends every session of the user. */
    setPassword: writeTransaction(db, (userId: string, hash: string, now: number): void => {
      setPassword.run({ userId, hash, now });
      deleteSessionsOf.run(userId);
    }),
    /** Enrol (sealed secret) or disable (null); disabling also removes every backup code (SPEC Authentication 13). */
    setTotp: writeTransaction(db, (userId: string, sealed: string | null, now: number): void => {
      setTotp.run({ userId, sealed, now });
      if (sealed === null) deleteCodes.run(userId);
    }),
    /** false when this time step (or a later one) was already used: a replayed code. */
    claimTotpStep: (userId: string, step: number): boolean => advanceStep.run({ userId, step }).changes > 0,
    /** Regenerating invalidates every previous code. */
    replaceBackupCodes: writeTransaction(db, (userId: string, hashes: readonly string[]): void => {
      deleteCodes.run(userId);
      for (const h of hashes) insertCode.run(userId, h);
    }),
    /** Single use: false when the code is unknown or already used. */
    useBackupCode: (userId: string, hash: string, now: number): boolean => useCode.run({ userId, hash, now }).changes > 0,
    unusedBackupCodes: (userId: string): number => unusedCodes.get(userId)?.n ?? 0,
    linkIdentity(i: { providerId: string; subject: string; userId: string; email: string | null; now: number }): void {
      insertIdentity.run(i);
    },
    identity: (providerId: string, subject: string): IdentityRecord | null => {
      const r = identity.get(providerId, subject);
      return r ? toIdentity(r) : null;
    },
    identitiesOf: (userId: string): IdentityRecord[] => identitiesOf.all(userId).map(toIdentity),
    unlinkIdentity: (userId: string, providerId: string): boolean => deleteIdentity.run(userId, providerId).changes > 0,
    newestSealedTotp: (): { sealed: string; associated: string } | null => newestTotp.get() ?? null,
  };
}

export type UsersRepo = ReturnType<typeof createUsersRepo>;
