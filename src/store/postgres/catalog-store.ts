/**
 * The catalog port on PostgreSQL (issue 12): what replicas on several hosts share. Every write notifies
 * 'catalog' inside its transaction, so each replica's in-memory catalog reloads once it commits. The SQL
 * mirrors the SQLite repos (keys-repo, projects-repo, endpoints-repo, config-sync), whose row mappers it
 * reuses: the columns hold the same values.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { ProjectConfig } from '../../config.js';
import { hashKeyValue, keyPrefix, newKeyId } from '../../core/auth/key-token.js';
import type { KeyCredential } from '../../core/records.js';
import type { CatalogStore, NewApiKey, SyncSummary } from '../../core/store/catalog-store.js';
import { declaredFields } from '../config-sync.js';
import { toEndpoint, type EndpointRow } from '../endpoints-repo.js';
import { toJson } from '../json-column.js';
import { toCredential, toKey, type CredentialRow, type KeyRow } from '../keys-repo.js';
import { NEW_WORKSPACE_ROUTING_DEFAULT, toProject, toWorkspace, type ProjectRow, type WorkspaceRow } from '../projects-repo.js';
import type { PgQueryable, PgStore } from './pg-store.js';

const TOPIC = 'catalog';

const CREDENTIALS = `
  SELECT k.*, s.hash, s.valid_until, u.id AS owner_id, r.role AS owner_role, r.workspace_ids AS owner_workspaces
  FROM api_key_secrets s JOIN api_keys k ON k.id = s.key_id
  LEFT JOIN dashboard_users u ON u.id = k.user_id
  LEFT JOIN dashboard_user_roles r ON r.user_id = k.user_id AND r.project_id = k.project_id`;

type KeyFields = Pick<NewApiKey, 'id' | 'name' | 'scopes' | 'allowedIps' | 'blockedIps' | 'expiresAt' | 'quotaRequests' | 'quotaWindow' | 'endpointId' | 'allowedWorkspaceIds'>;

const keyColumns = (k: KeyFields): unknown[] => [
  k.id,
  k.name,
  toJson(k.scopes),
  toJson(k.allowedIps),
  toJson(k.blockedIps),
  k.expiresAt,
  k.quotaRequests,
  k.quotaWindow,
  k.endpointId,
  k.allowedWorkspaceIds ? toJson(k.allowedWorkspaceIds) : null,
];

async function insertKey(db: PgQueryable, key: NewApiKey, hash: string): Promise<void> {
  await db.query(
    `INSERT INTO api_keys (id, name, scopes, allowed_ips, blocked_ips, expires_at, quota_requests, quota_window, endpoint_id,
       allowed_workspace_ids, project_id, prefix, user_id, source, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
    [...keyColumns(key), key.projectId, key.prefix, key.userId, key.source, key.createdAt],
  );
  await db.query('INSERT INTO api_key_secrets (hash, key_id, created_at, valid_until) VALUES ($1, $2, $3, NULL)', [hash, key.id, key.createdAt]);
}

export function createPgCatalogStore(store: PgStore): CatalogStore {
  const { pool } = store;
  return {
    async syncConfig(config, now) {
      const summary: SyncSummary = { projects: 0, endpoints: 0, endpointsDeleted: 0, keys: 0, keysRevoked: 0 };
      // Replicas started together each sync the same file. Under this lock a later sync reads what an
      // earlier one committed (a key's hash is looked up before it is inserted) and updates those rows.
      await store.transaction(async (db) => {
        await db.query(`SELECT pg_advisory_xact_lock(hashtext('switchboard_config_sync'))`);
        for (const p of config.projects) {
          await syncProject(db, p, now);
          summary.endpointsDeleted += await syncEndpoints(db, p, now);
          summary.endpoints += p.endpoints.length;
          summary.keysRevoked += await syncKeys(db, p, now);
          summary.keys += p.keys.length;
          summary.projects += 1;
        }
        await store.notifyChange(db, TOPIC);
      });
      return summary;
    },

    async loadSnapshot() {
      // One snapshot of the database: a key never appears before its project.
      return store.transaction(async (db) => {
        await db.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
        const projects = await db.query<ProjectRow>('SELECT * FROM projects');
        const workspaces = await db.query<WorkspaceRow>('SELECT * FROM workspaces WHERE deleted_at IS NULL ORDER BY created_at, id');
        const endpoints = await db.query<EndpointRow>('SELECT * FROM endpoints WHERE deleted_at IS NULL ORDER BY created_at, slug');
        const secrets = await db.query<CredentialRow & { hash: string }>(CREDENTIALS);
        const credentials = new Map<string, KeyCredential>();
        for (const row of secrets.rows) credentials.set(row.hash, toCredential(row));
        return {
          projects: projects.rows.map(toProject),
          workspaces: workspaces.rows.map(toWorkspace),
          endpoints: endpoints.rows.map(toEndpoint),
          credentials,
        };
      });
    },

    async findCredential(hash) {
      const { rows } = await pool.query<CredentialRow>(`${CREDENTIALS} WHERE s.hash = $1`, [hash]);
      return rows[0] ? toCredential(rows[0]) : null;
    },
    async listForProject(projectId) {
      const { rows } = await pool.query<KeyRow>('SELECT * FROM api_keys WHERE project_id = $1 ORDER BY created_at, id', [projectId]);
      return rows.map(toKey);
    },
    async findInProject(projectId, id) {
      const { rows } = await pool.query<KeyRow>('SELECT * FROM api_keys WHERE id = $1 AND project_id = $2', [id, projectId]);
      return rows[0] ? toKey(rows[0]) : null;
    },
    async rotatedValuesValidUntil(projectId) {
      const { rows } = await pool.query<{ key_id: string; valid_until: number }>(
        `SELECT s.key_id, MAX(s.valid_until) AS valid_until FROM api_key_secrets s JOIN api_keys k ON k.id = s.key_id
         WHERE k.project_id = $1 AND s.valid_until IS NOT NULL GROUP BY s.key_id`,
        [projectId],
      );
      return new Map(rows.map((r) => [r.key_id, r.valid_until]));
    },

    insert: (key, hash) =>
      store.transaction(async (db) => {
        await insertKey(db, key, hash);
        await store.notifyChange(db, TOPIC);
      }),

    revoke: (id, now, reason) =>
      store.transaction(async (db) => {
        const { rowCount } = await db.query('UPDATE api_keys SET revoked_at = $2, revoked_reason = $3 WHERE id = $1 AND revoked_at IS NULL', [id, now, reason]);
        if (!rowCount) return false;
        await store.notifyChange(db, TOPIC);
        return true;
      }),

    rotate: (id, newHash, newPrefix, now, graceUntil, scopes) =>
      store.transaction(async (db) => {
        // The row lock holds off a concurrent revocation or rotation until this one commits.
        const { rows } = await db.query<{ revoked_at: number | null; expires_at: number | null }>('SELECT revoked_at, expires_at FROM api_keys WHERE id = $1 FOR UPDATE', [id]);
        const key = rows[0];
        if (!key || key.revoked_at !== null || (key.expires_at !== null && key.expires_at <= now)) return false;
        await db.query('UPDATE api_key_secrets SET valid_until = $2 WHERE key_id = $1 AND valid_until IS NULL', [id, graceUntil]);
        await db.query('INSERT INTO api_key_secrets (hash, key_id, created_at, valid_until) VALUES ($1, $2, $3, NULL)', [newHash, id, now]);
        await db.query('UPDATE api_keys SET prefix = $2 WHERE id = $1', [id, newPrefix]);
        if (scopes !== undefined) await db.query('UPDATE api_keys SET scopes = $2 WHERE id = $1', [id, toJson(scopes)]);
        await store.notifyChange(db, TOPIC);
        return true;
      }),

    // The pool belongs to the store backend, which closes it.
    close: async () => undefined,
  };
}

async function syncProject(db: pg.PoolClient, p: ProjectConfig, now: number): Promise<void> {
  await db.query(
    `INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, default_workspace_id, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
     ON CONFLICT (id) DO UPDATE SET slug = EXCLUDED.slug, name = EXCLUDED.name, plan = EXCLUDED.plan,
       requests_per_minute = EXCLUDED.requests_per_minute, tokens_per_minute = EXCLUDED.tokens_per_minute,
       default_workspace_id = CASE WHEN projects.default_workspace_set_at IS NULL THEN EXCLUDED.default_workspace_id ELSE projects.default_workspace_id END,
       updated_at = EXCLUDED.updated_at`,
    [p.id, randomUUID(), p.slug, p.name ?? p.slug, p.plan, p.rate_limit.requests_per_minute, p.rate_limit.tokens_per_minute, p.default_workspace ?? null, now],
  );
  for (const w of p.workspaces) {
    await db.query(
      `INSERT INTO workspaces (project_id, id, name, routing_mode, routing_mode_default, zero_data_retention, operational, created_at)
       VALUES ($1, $2, $3, $4, '${NEW_WORKSPACE_ROUTING_DEFAULT}', $5, $6, $7)
       ON CONFLICT (project_id, id) DO UPDATE SET name = EXCLUDED.name,
         routing_mode = CASE WHEN workspaces.routing_mode_set_at IS NULL THEN EXCLUDED.routing_mode ELSE workspaces.routing_mode END,
         zero_data_retention = EXCLUDED.zero_data_retention, operational = EXCLUDED.operational, deleted_at = NULL`,
      [p.id, w.id, w.name, w.routing_mode, w.zero_data_retention ? 1 : 0, w.operational ? 1 : 0, now],
    );
  }
}

/** As config-sync's: the others deleted first, so a slug re-declared under a new id does not collide. */
async function syncEndpoints(db: pg.PoolClient, p: ProjectConfig, now: number): Promise<number> {
  const deleted = await db.query('UPDATE endpoints SET deleted_at = $2 WHERE project_id = $1 AND deleted_at IS NULL AND id <> ALL($3::text[])', [
    p.id,
    now,
    p.endpoints.map((e) => e.id),
  ]);
  const allWorkspaces = p.workspaces.map((w) => w.id);
  for (const e of p.endpoints) {
    await db.query(
      `INSERT INTO endpoints (id, project_id, slug, name, kind, tier, status, region, workspace_ids, model, upstream, router, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13)
       ON CONFLICT (id) DO UPDATE SET project_id = EXCLUDED.project_id, slug = EXCLUDED.slug, name = EXCLUDED.name,
         kind = EXCLUDED.kind, tier = EXCLUDED.tier, status = EXCLUDED.status, region = EXCLUDED.region,
         workspace_ids = EXCLUDED.workspace_ids, model = EXCLUDED.model, upstream = EXCLUDED.upstream,
         router = EXCLUDED.router, updated_at = EXCLUDED.updated_at, deleted_at = NULL`,
      [e.id, p.id, e.slug, e.name, e.kind, e.tier, e.status, e.region, toJson(e.workspaces ?? allWorkspaces), toJson(e.model), toJson(e.upstream), e.router ? toJson(e.router) : null, now],
    );
  }
  return deleted.rowCount ?? 0;
}

/** As config-sync's: the file wins on every field it declares; a key removed then re-added comes back. Returns how many were revoked. */
async function syncKeys(db: pg.PoolClient, p: ProjectConfig, now: number): Promise<number> {
  const declaredIds: string[] = [];
  for (const k of p.keys) {
    const hash = hashKeyValue(k.value);
    const { rows } = await db.query<{ key_id: string }>('SELECT key_id FROM api_key_secrets WHERE hash = $1', [hash]);
    const existing = rows[0]?.key_id;
    const fields = declaredFields(k, existing ?? newKeyId());
    if (existing) {
      await db.query(
        `UPDATE api_keys SET name = $2, scopes = $3, allowed_ips = $4, blocked_ips = $5, expires_at = $6, quota_requests = $7,
           quota_window = $8, endpoint_id = $9, allowed_workspace_ids = $10,
           revoked_at = CASE WHEN revoked_reason = 'config_removed' THEN NULL ELSE revoked_at END,
           revoked_reason = CASE WHEN revoked_reason = 'config_removed' THEN NULL ELSE revoked_reason END
         WHERE id = $1`,
        keyColumns(fields),
      );
    } else {
      await insertKey(db, { ...fields, projectId: p.id, prefix: keyPrefix(k.value), userId: null, source: 'config', createdAt: now }, hash);
    }
    declaredIds.push(fields.id);
  }
  const revoked = await db.query(
    `UPDATE api_keys SET revoked_at = $2, revoked_reason = 'config_removed'
     WHERE project_id = $1 AND source = 'config' AND revoked_at IS NULL AND id <> ALL($3::text[])`,
    [p.id, now, declaredIds],
  );
  return revoked.rowCount ?? 0;
}
