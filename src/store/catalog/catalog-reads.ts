/**
 * The catalog's reads, each defined once and compiled once (sql/sql-program.ts `prepared`): the credential
 * by value hash is on the request path (SQLite's in-memory catalog asks it on a key's first use, through
 * sqlite-catalog.ts, prepared once there), the others are read per management call or per reload.
 */
import type { Kysely } from 'kysely';
import { sqlFor } from '../sql/sql-builder.js';
import { prepared, type SqlDialect } from '../sql/sql-program.js';
import type { CatalogReadTables, CredentialRow } from './catalog-rows.js';

/**
 * Every value of every key with its key and its owner's reach. A user-owned key reaches what its user
 * reads now (SPEC Authentication 10): the user's role is read with the credential, and the catalog drops
 * cached credentials whenever the store changes.
 */
function credentials(db: Kysely<CatalogReadTables>) {
  return db
    .selectFrom('api_key_secrets as s')
    .innerJoin('api_keys as k', 'k.id', 's.key_id')
    .leftJoin('dashboard_users as u', 'u.id', 'k.user_id')
    .leftJoin('dashboard_user_roles as r', (join) => join.onRef('r.user_id', '=', 'k.user_id').onRef('r.project_id', '=', 'k.project_id'))
    .selectAll('k')
    .select(['s.valid_until', 'u.id as owner_id', 'r.role as owner_role', 'r.workspace_ids as owner_workspaces']);
}

export type CredentialWithHash = CredentialRow & { hash: string };

export function catalogReads(dialect: SqlDialect) {
  const { db } = sqlFor<CatalogReadTables>(dialect);
  return {
    credential: prepared((hash: string) => credentials(db).where('s.hash', '=', hash)),
    /** Every credential, for a catalog that holds them all (PostgreSQL's replicas). */
    allCredentials: prepared(() => credentials(db).select('s.hash')),
    keyIdOfHash: prepared((hash: string) => db.selectFrom('api_key_secrets').select('key_id').where('hash', '=', hash)),
    keysOfProject: prepared((projectId: string) => db.selectFrom('api_keys').selectAll().where('project_id', '=', projectId).orderBy('created_at').orderBy('id')),
    keyInProject: prepared((projectId: string, id: string) => db.selectFrom('api_keys').selectAll().where('id', '=', id).where('project_id', '=', projectId)),
    /** Key id -> the latest end of grace among its rotated-out values. */
    graceOfProject: prepared((projectId: string) =>
      db
        .selectFrom('api_key_secrets as s')
        .innerJoin('api_keys as k', 'k.id', 's.key_id')
        .select(['s.key_id'])
        .select((eb) => eb.fn.max('s.valid_until').as('valid_until'))
        .where('k.project_id', '=', projectId)
        .where('s.valid_until', 'is not', null)
        .groupBy('s.key_id'),
    ),
    projects: prepared(() => db.selectFrom('projects').selectAll()),
    /** Live workspaces (not deleted). */
    workspaces: prepared(() => db.selectFrom('workspaces').selectAll().where('deleted_at', 'is', null).orderBy('created_at').orderBy('id')),
    /** Live endpoints (not deleted). */
    endpoints: prepared(() => db.selectFrom('endpoints').selectAll().where('deleted_at', 'is', null).orderBy('created_at').orderBy('slug')),
  };
}

export type CatalogReads = ReturnType<typeof catalogReads>;
