/**
 * The identity port in PostgreSQL (migration 002-identity), shared by every replica: a user created on
 * one signs in on another, a session cookie issued by one is honoured by all, and signing out anywhere
 * ends the session everywhere. Nothing here is cached: the dashboard reads its session per page (one
 * indexed query, `sessions.view`), and the API request path never reads these tables.
 *
 * E-mail lookups go through lower(email), the unique index's expression, so they use it.
 */
import type pg from 'pg';
import type { IdentityStore, SessionRecord, UserRecord, UserRole } from '../../core/store/identity-store.js';
import { fromNullableJson, toJson } from '../json-column.js';
import { toFlow, toIdentity, toSession, toUser, type FlowRow, type IdentityRow, type SessionRow, type UserRow } from '../identity-rows.js';
import type { PgQueryable, PgStore } from './pg-store.js';

interface RoleRow {
  project_id: string;
  role: UserRole['role'];
  workspace_ids: string | null;
}

const USER_COLUMNS = 'id, email, name, password_hash, totp_secret_sealed, totp_last_step, created_at, updated_at';

const toRole = (r: RoleRow): UserRole => ({ projectId: r.project_id, role: r.role, workspaceIds: fromNullableJson<string[]>(r.workspace_ids) });

const changed = (result: pg.QueryResult): boolean => (result.rowCount ?? 0) > 0;

/** The catalog's topic (store/postgres/migrations/001-catalog): every replica reloads its credentials on it. */
const CATALOG_TOPIC = 'catalog';

export function createPgIdentityStore(store: PgStore): IdentityStore {
  const { pool } = store;

  const upsertRole = (db: PgQueryable, userId: string, r: UserRole): Promise<pg.QueryResult> =>
    db.query(
      `INSERT INTO dashboard_user_roles (user_id, project_id, role, workspace_ids) VALUES ($1, $2, $3, $4)
       ON CONFLICT (user_id, project_id) DO UPDATE SET role = excluded.role, workspace_ids = excluded.workspace_ids`,
      [userId, r.projectId, r.role, r.workspaceIds ? toJson(r.workspaceIds) : null],
    );
  const insertSession = (db: PgQueryable, s: SessionRecord): Promise<pg.QueryResult> =>
    db.query(
      `INSERT INTO dashboard_sessions (id_hash, user_id, stage, created_at, last_seen_at, ip, user_agent, next_path)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [s.idHash, s.userId, s.stage, s.createdAt, s.lastSeenAt, s.ip, s.userAgent, s.nextPath],
    );
  const oneUser = async (where: string, value: string): Promise<UserRecord | null> => {
    const { rows } = await pool.query<UserRow>(`SELECT ${USER_COLUMNS} FROM dashboard_users WHERE ${where}`, [value]);
    return rows[0] ? toUser(rows[0]) : null;
  };

  return {
    users: {
      async create(u, roles) {
        await store.transaction(async (db) => {
          await db.query(`INSERT INTO dashboard_users (id, email, name, password_hash, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)`, [
            u.id,
            u.email,
            u.name,
            u.passwordHash,
            u.now,
          ]);
          for (const r of roles) await upsertRole(db, u.id, r);
        });
      },
      // A role decides what the user's own API keys reach (store/keys-repo.ts): every replica reloads them.
      async setRole(userId, role) {
        await store.transaction(async (db) => {
          await upsertRole(db, userId, role);
          await store.notifyChange(db, CATALOG_TOPIC);
        });
      },
      removeRole: (userId, projectId, now) =>
        store.transaction(async (db) => {
          const removed = changed(await db.query('DELETE FROM dashboard_user_roles WHERE user_id = $1 AND project_id = $2', [userId, projectId]));
          if (!removed) return { removed, keysRevoked: 0 };
          const revoked = await db.query(
            "UPDATE api_keys SET revoked_at = $3, revoked_reason = 'member_removed' WHERE user_id = $1 AND project_id = $2 AND revoked_at IS NULL",
            [userId, projectId, now],
          );
          // What the user's keys reach changed (the role is gone, some are revoked): every replica reloads them.
          await store.notifyChange(db, CATALOG_TOPIC);
          return { removed, keysRevoked: revoked.rowCount ?? 0 };
        }),
      byId: (id) => oneUser('id = $1', id),
      byEmail: (email) => oneUser('lower(email) = lower($1)', email),
      async list() {
        const { rows } = await pool.query<UserRow>(`SELECT ${USER_COLUMNS} FROM dashboard_users ORDER BY created_at, id`);
        return rows.map(toUser);
      },
      async roles(userId) {
        const { rows } = await pool.query<RoleRow>('SELECT project_id, role, workspace_ids FROM dashboard_user_roles WHERE user_id = $1 ORDER BY project_id', [userId]);
        return rows.map(toRole);
      },
      delete: (userId, now) =>
        store.transaction(async (db) => {
          // api_keys is the catalog group's table (001-catalog); the revocation commits with the deletion or not at all.
          const revoked = await db.query(
            "UPDATE api_keys SET revoked_at = $2, revoked_reason = 'user_deleted' WHERE user_id = $1 AND revoked_at IS NULL",
            [userId, now],
          );
          const deleted = changed(await db.query('DELETE FROM dashboard_users WHERE id = $1', [userId]));
          const keysRevoked = revoked.rowCount ?? 0;
          if (keysRevoked > 0 || deleted) await store.notifyChange(db, CATALOG_TOPIC);
          return { deleted, keysRevoked };
        }),
      async setPassword(userId, hash, now) {
        await store.transaction(async (db) => {
          await db.query('UPDATE dashboard_users SET password_hash = $2, updated_at = $3 WHERE id = $1', [userId, hash, now]);
          await db.query('DELETE FROM dashboard_sessions WHERE user_id = $1', [userId]);
        });
      },
      async setTotp(userId, sealed, now) {
        await store.transaction(async (db) => {
          await db.query('UPDATE dashboard_users SET totp_secret_sealed = $2, totp_last_step = NULL, updated_at = $3 WHERE id = $1', [userId, sealed, now]);
          if (sealed === null) await db.query('DELETE FROM dashboard_backup_codes WHERE user_id = $1', [userId]);
        });
      },
      // The compare-and-set that makes a TOTP code single-use across replicas: one UPDATE, row-locked.
      claimTotpStep: async (userId, step) =>
        changed(
          await pool.query('UPDATE dashboard_users SET totp_last_step = $2 WHERE id = $1 AND (totp_last_step IS NULL OR totp_last_step < $2)', [userId, step]),
        ),
      async replaceBackupCodes(userId, hashes) {
        await store.transaction(async (db) => {
          await db.query('DELETE FROM dashboard_backup_codes WHERE user_id = $1', [userId]);
          if (hashes.length > 0) {
            await db.query(
              'INSERT INTO dashboard_backup_codes (user_id, code_hash, used_at) SELECT $1, h, NULL FROM unnest($2::text[]) AS h ON CONFLICT DO NOTHING',
              [userId, [...hashes]],
            );
          }
        });
      },
      useBackupCode: async (userId, hash, now) =>
        changed(await pool.query('UPDATE dashboard_backup_codes SET used_at = $3 WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL', [userId, hash, now])),
      async unusedBackupCodes(userId) {
        const { rows } = await pool.query<{ n: number }>('SELECT COUNT(*) AS n FROM dashboard_backup_codes WHERE user_id = $1 AND used_at IS NULL', [userId]);
        return rows[0]?.n ?? 0;
      },
      async linkIdentity(i) {
        await pool.query('INSERT INTO dashboard_identities (provider_id, subject, user_id, email, created_at) VALUES ($1, $2, $3, $4, $5)', [
          i.providerId,
          i.subject,
          i.userId,
          i.email,
          i.now,
        ]);
      },
      async identity(providerId, subject) {
        const { rows } = await pool.query<IdentityRow>('SELECT * FROM dashboard_identities WHERE provider_id = $1 AND subject = $2', [providerId, subject]);
        return rows[0] ? toIdentity(rows[0]) : null;
      },
      async identitiesOf(userId) {
        const { rows } = await pool.query<IdentityRow>('SELECT * FROM dashboard_identities WHERE user_id = $1 ORDER BY provider_id', [userId]);
        return rows.map(toIdentity);
      },
      unlinkIdentity: async (userId, providerId) =>
        changed(await pool.query('DELETE FROM dashboard_identities WHERE user_id = $1 AND provider_id = $2', [userId, providerId])),
      async newestSealedTotp() {
        const { rows } = await pool.query<{ sealed: string; associated: string }>(
          'SELECT totp_secret_sealed AS sealed, id AS associated FROM dashboard_users WHERE totp_secret_sealed IS NOT NULL ORDER BY updated_at DESC, id LIMIT 1',
        );
        return rows[0] ?? null;
      },
    },

    sessions: {
      async find(idHash) {
        const { rows } = await pool.query<SessionRow>('SELECT * FROM dashboard_sessions WHERE id_hash = $1', [idHash]);
        return rows[0] ? toSession(rows[0]) : null;
      },
      // Every dashboard page asks this: one round trip, by primary key, the roles folded in as JSON.
      async view(idHash) {
        const { rows } = await pool.query<SessionRow & { u: UserRow; roles: RoleRow[] }>(
          `SELECT s.*, row_to_json(u) AS u,
             COALESCE((SELECT json_agg(json_build_object('project_id', r.project_id, 'role', r.role, 'workspace_ids', r.workspace_ids) ORDER BY r.project_id)
                       FROM dashboard_user_roles r WHERE r.user_id = u.id), '[]'::json) AS roles
           FROM dashboard_sessions s JOIN dashboard_users u ON u.id = s.user_id
           WHERE s.id_hash = $1`,
          [idHash],
        );
        const row = rows[0];
        if (!row) return null;
        // row_to_json renders BIGINT as a JSON number: the pool's parsers do not apply inside JSON.
        return { session: toSession(row), user: toUser(row.u), roles: row.roles.map(toRole) };
      },
      async touch(idHash, now) {
        await pool.query('UPDATE dashboard_sessions SET last_seen_at = $2 WHERE id_hash = $1 AND last_seen_at < $2', [idHash, now]);
      },
      async remove(idHash) {
        await pool.query('DELETE FROM dashboard_sessions WHERE id_hash = $1', [idHash]);
      },
      async replace(oldHash, next) {
        await store.transaction(async (db) => {
          if (oldHash !== null) await db.query('DELETE FROM dashboard_sessions WHERE id_hash = $1', [oldHash]);
          await insertSession(db, next);
        });
      },
      removeOfUser: async (userId, idHash) => changed(await pool.query('DELETE FROM dashboard_sessions WHERE user_id = $1 AND id_hash = $2', [userId, idHash])),
      async removeAllOfUser(userId) {
        await pool.query('DELETE FROM dashboard_sessions WHERE user_id = $1', [userId]);
      },
      async listOfUser(userId) {
        const { rows } = await pool.query<SessionRow>("SELECT * FROM dashboard_sessions WHERE user_id = $1 AND stage = 'full' ORDER BY created_at DESC", [userId]);
        return rows.map(toSession);
      },
      async removeStale(idleBefore, createdBefore, flowsBefore) {
        await store.transaction(async (db) => {
          await db.query('DELETE FROM dashboard_sessions WHERE last_seen_at < $1 OR created_at < $2', [idleBefore, createdBefore]);
          await db.query('DELETE FROM dashboard_oidc_flows WHERE created_at < $1', [flowsBefore]);
        });
      },
      async insertFlow(f) {
        await pool.query(
          `INSERT INTO dashboard_oidc_flows (id_hash, provider_id, state, nonce, code_verifier, connect_user_id, next_path, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
          [f.idHash, f.providerId, f.state, f.nonce, f.codeVerifier, f.connectUserId, f.nextPath, f.createdAt],
        );
      },
      // One statement: of two replicas racing on the same callback, exactly one gets the row.
      async takeFlow(idHash) {
        const { rows } = await pool.query<FlowRow>('DELETE FROM dashboard_oidc_flows WHERE id_hash = $1 RETURNING *', [idHash]);
        return rows[0] ? toFlow(rows[0]) : null;
      },
    },
  };
}
