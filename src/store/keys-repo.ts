/**
 * API keys and their secrets (value hashes). A key value is never stored: only its SHA-256.
 * The gateway reads credentials through the in-memory cache in `store/catalog.ts`; this file is the SQL.
 */
import type { Scope } from '../config.js';
import { compileIpFilter } from '../core/auth/ip-filter.js';
import type { ApiKeyRecord, KeyCredential } from '../core/records.js';
import type { NewApiKey } from '../core/store/catalog-store.js';
import { writeTransaction, type Db } from './db.js';
import { fromJson, fromNullableJson, toJson } from './json-column.js';

export interface KeyRow {
  id: string;
  project_id: string;
  name: string | null;
  prefix: string;
  scopes: string;
  allowed_ips: string;
  blocked_ips: string;
  expires_at: number | null;
  quota_requests: number;
  quota_window: number;
  endpoint_id: string | null;
  allowed_workspace_ids: string | null;
  user_id: string | null;
  source: ApiKeyRecord['source'];
  created_at: number;
  revoked_at: number | null;
}

export function toKey(r: KeyRow): ApiKeyRecord {
  const allowedIps = fromJson<string[]>(r.allowed_ips);
  const blockedIps = fromJson<string[]>(r.blocked_ips);
  return {
    id: r.id,
    projectId: r.project_id,
    name: r.name,
    prefix: r.prefix,
    scopes: fromJson<Scope[]>(r.scopes),
    allowedIps,
    blockedIps,
    ipFilter: compileIpFilter(allowedIps, blockedIps),
    expiresAt: r.expires_at,
    quotaRequests: r.quota_requests,
    quotaWindow: r.quota_window,
    endpointId: r.endpoint_id,
    allowedWorkspaceIds: fromNullableJson<string[]>(r.allowed_workspace_ids),
    userId: r.user_id,
    source: r.source,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
  };
}

export interface CredentialRow extends KeyRow {
  valid_until: number | null;
  owner_id: string | null;
  owner_role: string | null;
  owner_workspaces: string | null;
}

/**
 * A user-owned key: a deleted user makes it inactive; without a list of its own it is confined to the
 * workspaces its user reads in the key's project (none when the user has no role there any more); a user
 * who reads every workspace leaves it unconfined.
 */
export function toCredential(row: CredentialRow): KeyCredential {
  const key = toKey(row);
  if (key.userId === null) return { key, validUntil: row.valid_until };
  if (row.owner_id === null) return { key, validUntil: row.valid_until, ownerDeleted: true };
  if (key.allowedWorkspaceIds !== null) return { key, validUntil: row.valid_until };
  const readable = row.owner_role === null ? [] : fromNullableJson<string[]>(row.owner_workspaces);
  if (readable === null) return { key, validUntil: row.valid_until };
  return { key: { ...key, allowedWorkspaceIds: readable, listFromOwner: true }, validUntil: row.valid_until };
}

export type NewKey = NewApiKey;

/** The fields a config file declares for a key: what `updateDeclared` overwrites. */
type DeclaredKeyFields = Omit<NewKey, 'prefix' | 'source' | 'createdAt' | 'userId' | 'projectId'>;

function keyRowParams(k: DeclaredKeyFields) {
  return {
    id: k.id,
    name: k.name,
    scopes: toJson(k.scopes),
    allowedIps: toJson(k.allowedIps),
    blockedIps: toJson(k.blockedIps),
    expiresAt: k.expiresAt,
    quotaRequests: k.quotaRequests,
    quotaWindow: k.quotaWindow,
    endpointId: k.endpointId,
    allowedWorkspaceIds: k.allowedWorkspaceIds ? toJson(k.allowedWorkspaceIds) : null,
  };
}

/** Credential lookup by value hash: the request hot path (through the catalog's cache), so statements compile once. */
function credentialLookups(db: Db) {
  // A user-owned key reaches what its user reads now (SPEC Authentication 10): the user's role is read with
  // the credential, and the catalog drops cached credentials whenever the store changes.
  const credentialByHash = db.prepare<[string], CredentialRow>(`
    SELECT k.*, s.valid_until, u.id AS owner_id, r.role AS owner_role, r.workspace_ids AS owner_workspaces
    FROM api_key_secrets s JOIN api_keys k ON k.id = s.key_id
    LEFT JOIN dashboard_users u ON u.id = k.user_id
    LEFT JOIN dashboard_user_roles r ON r.user_id = k.user_id AND r.project_id = k.project_id
    WHERE s.hash = ?`);
  const keyIdByHash = db.prepare<[string], { key_id: string }>('SELECT key_id FROM api_key_secrets WHERE hash = ?');
  return {
    keyIdForHash: (hash: string): string | null => keyIdByHash.get(hash)?.key_id ?? null,
    findCredential(hash: string): KeyCredential | null {
      const row = credentialByHash.get(hash);
      return row ? toCredential(row) : null;
    },
  };
}

/** A project's keys, and when their rotated-out values stop working. */
function projectListings(db: Db) {
  const keysOfProject = db.prepare<[string], KeyRow>('SELECT * FROM api_keys WHERE project_id = ? ORDER BY created_at, id');
  const keyById = db.prepare<[string, string], KeyRow>('SELECT * FROM api_keys WHERE id = ? AND project_id = ?');
  const graceOfProject = db.prepare<[string], { key_id: string; valid_until: number }>(`
    SELECT s.key_id, MAX(s.valid_until) AS valid_until FROM api_key_secrets s JOIN api_keys k ON k.id = s.key_id
    WHERE k.project_id = ? AND s.valid_until IS NOT NULL GROUP BY s.key_id`);
  return {
    listForProject: (projectId: string): ApiKeyRecord[] => keysOfProject.all(projectId).map(toKey),
    findInProject(projectId: string, id: string): ApiKeyRecord | null {
      const row = keyById.get(id, projectId);
      return row ? toKey(row) : null;
    },
    /** Key id -> the latest end of grace among its rotated-out values (keys never rotated are absent). */
    rotatedValuesValidUntil(projectId: string): Map<string, number> {
      return new Map(graceOfProject.all(projectId).map((r) => [r.key_id, r.valid_until]));
    },
  };
}

/** Minting a key with its first value, and keeping config-declared keys in step with the file. */
function mintingAndDeclaring(db: Db) {
  const insertKey = db.prepare(`
    INSERT INTO api_keys (id, project_id, name, prefix, scopes, allowed_ips, blocked_ips, expires_at, quota_requests,
      quota_window, endpoint_id, allowed_workspace_ids, user_id, source, created_at)
    VALUES (@id, @projectId, @name, @prefix, @scopes, @allowedIps, @blockedIps, @expiresAt, @quotaRequests,
      @quotaWindow, @endpointId, @allowedWorkspaceIds, @userId, @source, @createdAt)`);
  const insertSecret = db.prepare(
    'INSERT INTO api_key_secrets (hash, key_id, created_at, valid_until) VALUES (?, ?, ?, NULL)',
  );
  const updateDeclared = db.prepare(`
    UPDATE api_keys SET name = @name, scopes = @scopes, allowed_ips = @allowedIps, blocked_ips = @blockedIps,
      expires_at = @expiresAt, quota_requests = @quotaRequests, quota_window = @quotaWindow, endpoint_id = @endpointId,
      allowed_workspace_ids = @allowedWorkspaceIds,
      revoked_at = CASE WHEN revoked_reason = 'config_removed' THEN NULL ELSE revoked_at END,
      revoked_reason = CASE WHEN revoked_reason = 'config_removed' THEN NULL ELSE revoked_reason END
    WHERE id = @id`);
  const revokeUndeclared = db.prepare(`
    UPDATE api_keys SET revoked_at = @now, revoked_reason = 'config_removed'
    WHERE project_id = @projectId AND source = 'config' AND revoked_at IS NULL
      AND id NOT IN (SELECT value FROM json_each(@keep))`);
  const insertWithSecret = writeTransaction(db, (key: NewKey, hash: string): void => {
    insertKey.run({ ...keyRowParams(key), projectId: key.projectId, prefix: key.prefix, userId: key.userId, source: key.source, createdAt: key.createdAt });
    insertSecret.run(hash, key.id, key.createdAt);
  });
  return {
    /** Inserts a key with its first value, in one transaction. */
    insert(key: NewKey, hash: string): void {
      insertWithSecret(key, hash);
    },
    /** Config-declared keys: the file wins on every field it declares; a key removed then re-added comes back. */
    updateDeclared(key: DeclaredKeyFields): void {
      updateDeclared.run(keyRowParams(key));
    },
    revokeUndeclaredConfigKeys(projectId: string, keepIds: readonly string[], now: number): number {
      return revokeUndeclared.run({ projectId, keep: toJson(keepIds), now }).changes;
    },
  };
}

interface Rotation {
  id: string;
  hash: string;
  prefix: string;
  now: number;
  graceUntil: number;
  scopes: readonly Scope[] | null;
}

/** The transaction that swaps a key's current value for a new one (see `rotate` below). */
function rotationTransaction(db: Db): (r: Rotation) => void {
  const endCurrentSecret = db.prepare('UPDATE api_key_secrets SET valid_until = @until WHERE key_id = @id AND valid_until IS NULL');
  const insertRotatedSecret = db.prepare('INSERT INTO api_key_secrets (hash, key_id, created_at, valid_until) VALUES (@hash, @id, @now, NULL)');
  const setPrefix = db.prepare('UPDATE api_keys SET prefix = @prefix WHERE id = @id');
  const setScopes = db.prepare('UPDATE api_keys SET scopes = @scopes WHERE id = @id');
  return writeTransaction(db, (r: Rotation): void => {
    endCurrentSecret.run({ id: r.id, until: r.graceUntil });
    insertRotatedSecret.run({ hash: r.hash, id: r.id, now: r.now });
    setPrefix.run({ prefix: r.prefix, id: r.id });
    if (r.scopes !== null) setScopes.run({ scopes: toJson(r.scopes), id: r.id });
  });
}

/** Revoking and rotating one key. */
function revocationAndRotation(db: Db) {
  const revoke = db.prepare(
    "UPDATE api_keys SET revoked_at = @now, revoked_reason = @reason WHERE id = @id AND revoked_at IS NULL",
  );
  const keyByIdAlone = db.prepare<[string], KeyRow>('SELECT * FROM api_keys WHERE id = ?');
  const rotateTx = rotationTransaction(db);
  return {
    /** Permanent (SPEC "API key" states); false when the key was already revoked. */
    revoke(id: string, now: number, reason: string): boolean {
      return revoke.run({ id, now, reason }).changes > 0;
    },
    /**
     * SPEC Authentication 11: the current value stays valid until `graceUntil`, the new one is current.
     * A value rotated out earlier keeps its own, earlier end. The prefix follows the new value.
     */
    rotate(id: string, newHash: string, newPrefix: string, now: number, graceUntil: number, scopes: readonly Scope[] | null = null): void {
      rotateTx({ id, hash: newHash, prefix: newPrefix, now, graceUntil, scopes });
    },
    /** `rotate` for an active key only (not revoked, not expired at `now`), checked under the same write lock. */
    rotateIfActive: writeTransaction(db, (id: string, newHash: string, newPrefix: string, now: number, graceUntil: number, scopes: readonly Scope[] | null): boolean => {
      const row = keyByIdAlone.get(id);
      if (!row || row.revoked_at !== null || (row.expires_at !== null && row.expires_at <= now)) return false;
      rotateTx({ id, hash: newHash, prefix: newPrefix, now, graceUntil, scopes });
      return true;
    }),
  };
}

/**
 * The keys repo: each group prepares its statements once, here, when the repo is made; the methods are
 * plain synchronous calls on them.
 */
export function createKeysRepo(db: Db) {
  return {
    ...mintingAndDeclaring(db),
    ...credentialLookups(db),
    ...projectListings(db),
    ...revocationAndRotation(db),
  };
}

export type KeysRepo = ReturnType<typeof createKeysRepo>;
