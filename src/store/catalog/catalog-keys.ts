/**
 * The catalog's key writes as programs (sql/sql-program.ts), one definition for both backends: minting a
 * key with its first value, revoking, rotating, and keeping config-declared keys in step with the file
 * (config-sync.ts). A key value is never stored: only its SHA-256. Each write that changed a row sends the
 * change notice 'catalog' in its transaction (PostgreSQL: every replica's catalog reloads once it commits).
 */
import type { Insertable, Kysely } from 'kysely';
import type { Scope } from '../../config.js';
import type { KeyRotation, NewApiKey } from '../../core/store/catalog-store.js';
import { toJson } from '../json-column.js';
import { changeNotice } from '../sql/change-notices.js';
import { first, preparedRow, prepared, run, type SqlDialect, type SqlProgram } from '../sql/sql-program.js';
import type { CatalogTables } from './catalog-tables.js';

export const CATALOG_TOPIC = 'catalog';

/** The fields a config file declares for a key: what `updateDeclared` overwrites. */
export type DeclaredKeyFields = Omit<NewApiKey, 'prefix' | 'source' | 'createdAt' | 'userId' | 'issuedBy' | 'projectId'>;

/** The declared fields as the columns hold them. */
const declaredColumns = (k: DeclaredKeyFields) => ({
  name: k.name,
  scopes: toJson(k.scopes),
  allowed_ips: toJson(k.allowedIps),
  blocked_ips: toJson(k.blockedIps),
  expires_at: k.expiresAt,
  quota_requests: k.quotaRequests,
  quota_window: k.quotaWindow,
  endpoint_id: k.endpointId,
  allowed_workspace_ids: k.allowedWorkspaceIds ? toJson(k.allowedWorkspaceIds) : null,
});

export function keyPrograms(db: Kysely<CatalogTables>, dialect: SqlDialect) {
  const insertKey = preparedRow((row: Insertable<CatalogTables['api_keys']>) => db.insertInto('api_keys').values(row));
  const insertSecret = prepared((hash: string, keyId: string, createdAt: number) => db.insertInto('api_key_secrets').values({ hash, key_id: keyId, created_at: createdAt, valid_until: null }));
  const revokeKey = prepared((id: string, now: number, reason: string) =>
    db.updateTable('api_keys').set({ revoked_at: now, revoked_reason: reason }).where('id', '=', id).where('revoked_at', 'is', null),
  );
  // PostgreSQL's row lock holds off a concurrent revocation or rotation until this one commits; SQLite's
  // IMMEDIATE transaction already holds the file's write lock from its start.
  const stateOf = prepared((id: string) => {
    const select = db.selectFrom('api_keys').select(['revoked_at', 'expires_at']).where('id', '=', id);
    return dialect === 'postgres' ? select.forUpdate() : select;
  });

  /** A key with its first value (no notice: the caller's transaction sends it). */
  function* insertWithSecret(key: NewApiKey, hash: string): SqlProgram<void> {
    yield* run(insertKey({ ...declaredColumns(key), id: key.id, project_id: key.projectId, prefix: key.prefix, user_id: key.userId, issued_by: key.issuedBy, source: key.source, created_at: key.createdAt }));
    yield* run(insertSecret(hash, key.id, key.createdAt));
  }

  function* insert(key: NewApiKey, hash: string): SqlProgram<void> {
    yield* insertWithSecret(key, hash);
    yield* changeNotice(CATALOG_TOPIC);
  }

  /** Permanent (SPEC "API key" states); false when the key was already revoked. */
  function* revoke(id: string, now: number, reason: string): SqlProgram<boolean> {
    if ((yield* run(revokeKey(id, now, reason))) === 0) return false;
    yield* changeNotice(CATALOG_TOPIC);
    return true;
  }

  /**
   * SPEC Authentication 11: the current value stays valid until `graceUntil`, the new one is current, the
   * prefix follows it; a value rotated out earlier keeps its own, earlier end. Only an active key (not
   * revoked, not expired at `now`) rotates, checked in the same transaction as the change.
   */
  function* rotate(r: KeyRotation): SqlProgram<boolean> {
    const key = yield* first(stateOf(r.id));
    if (!key || key.revoked_at !== null || (key.expires_at !== null && key.expires_at <= r.now)) return false;
    yield* run(db.updateTable('api_key_secrets').set({ valid_until: r.graceUntil }).where('key_id', '=', r.id).where('valid_until', 'is', null));
    yield* run(insertSecret(r.hash, r.id, r.now));
    yield* run(db.updateTable('api_keys').set({ prefix: r.prefix, ...(r.issuedBy === undefined ? {} : { issued_by: r.issuedBy }) }).where('id', '=', r.id));
    if (r.scopes !== undefined) yield* run(db.updateTable('api_keys').set({ scopes: toJson(r.scopes) }).where('id', '=', r.id));
    yield* changeNotice(CATALOG_TOPIC);
    return true;
  }

  return { insertWithSecret, insert, revoke, rotate };
}

/**
 * Config-declared keys: the file wins on every field it declares; a key removed then re-added comes back
 * (its `config_removed` revocation is lifted, any other stays).
 */
export function updateDeclared(db: Kysely<CatalogTables>, k: DeclaredKeyFields): SqlProgram<number> {
  return run(
    db
      .updateTable('api_keys')
      .set((eb) => ({
        ...declaredColumns(k),
        revoked_at: eb.case().when('revoked_reason', '=', 'config_removed').then(eb.lit(null)).else(eb.ref('revoked_at')).end(),
        revoked_reason: eb.case().when('revoked_reason', '=', 'config_removed').then(eb.lit(null)).else(eb.ref('revoked_reason')).end(),
      }))
      .where('id', '=', k.id),
  );
}

/** Revokes the project's config keys the file no longer declares; returns how many. */
export function revokeUndeclared(db: Kysely<CatalogTables>, projectId: string, keepIds: readonly string[], now: number): SqlProgram<number> {
  let query = db.updateTable('api_keys').set({ revoked_at: now, revoked_reason: 'config_removed' }).where('project_id', '=', projectId).where('source', '=', 'config').where('revoked_at', 'is', null);
  if (keepIds.length > 0) query = query.where('id', 'not in', keepIds);
  return run(query);
}
