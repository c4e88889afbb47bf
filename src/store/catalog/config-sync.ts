/**
 * The config file declares infrastructure; at every start it is synced into the store in one transaction
 * (idempotent upsert), one program for both backends. Endpoints removed from the file are marked deleted;
 * bootstrap keys removed from the file are revoked (and come back if re-added). Projects and workspaces
 * are never deleted by a sync: API-created state hangs off them. A field changed through the API since
 * (a workspace's routing mode, a project's default workspace: their `*_set_at` stamp) is left alone.
 *
 * Processes (or replicas) started together each sync the same file. They are serialized: SQLite's
 * IMMEDIATE transaction takes the file's write lock first, PostgreSQL takes a transaction-scoped advisory
 * lock as the program's first step. A later sync then reads what an earlier one committed (a key's hash is
 * looked up before it is inserted) and updates those rows instead of inserting them twice.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Config, KeyConfig, ProjectConfig } from '../../config.js';
import { hashKeyValue, keyPrefix, newKeyId } from '../../core/auth/key-token.js';
import type { SyncSummary } from '../../core/store/catalog-store.js';
import { toJson } from '../json-column.js';
import { changeNotice } from '../sql/change-notices.js';
import { first, native, run, type SqlProgram } from '../sql/sql-program.js';
import { CATALOG_TOPIC, keyPrograms, revokeUndeclared, updateDeclared, type DeclaredKeyFields } from './catalog-keys.js';
import type { CatalogReads } from './catalog-reads.js';
import { NEW_WORKSPACE_ROUTING_DEFAULT } from './catalog-rows.js';
import type { CatalogTables } from './catalog-tables.js';

type Db = Kysely<CatalogTables>;
type Keys = ReturnType<typeof keyPrograms>;

/** PostgreSQL's serialization of syncs (see above); SQLite's transaction already holds the write lock. */
const syncLock = (): SqlProgram<void> =>
  native({
    sqlite: () => undefined,
    postgres: async (client) => {
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('switchboard_config_sync'))`);
    },
  });

export function* syncConfigProgram(db: Db, reads: CatalogReads, keys: Keys, config: Config, now: number): SqlProgram<SyncSummary> {
  yield* syncLock();
  const summary: SyncSummary = { projects: 0, endpoints: 0, endpointsDeleted: 0, keys: 0, keysRevoked: 0 };
  for (const p of config.projects) {
    yield* syncProject(db, p, now);
    summary.endpointsDeleted += yield* syncEndpoints(db, p, now);
    summary.endpoints += p.endpoints.length;
    summary.keysRevoked += yield* syncKeys(db, reads, keys, p, now);
    summary.keys += p.keys.length;
    summary.projects += 1;
  }
  yield* changeNotice(CATALOG_TOPIC);
  return summary;
}

function* syncProject(db: Db, p: ProjectConfig, now: number): SqlProgram<void> {
  yield* run(
    db
      .insertInto('projects')
      .values({
        id: p.id,
        uuid: randomUUID(),
        slug: p.slug,
        name: p.name ?? p.slug,
        plan: p.plan,
        requests_per_minute: p.rate_limit.requests_per_minute,
        tokens_per_minute: p.rate_limit.tokens_per_minute,
        default_workspace_id: p.default_workspace ?? null,
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) =>
        oc.column('id').doUpdateSet((eb) => ({
          slug: eb.ref('excluded.slug'),
          name: eb.ref('excluded.name'),
          plan: eb.ref('excluded.plan'),
          requests_per_minute: eb.ref('excluded.requests_per_minute'),
          tokens_per_minute: eb.ref('excluded.tokens_per_minute'),
          default_workspace_id: eb.case().when('projects.default_workspace_set_at', 'is', null).then(eb.ref('excluded.default_workspace_id')).else(eb.ref('projects.default_workspace_id')).end(),
          updated_at: eb.ref('excluded.updated_at'),
        })),
      ),
  );
  for (const w of p.workspaces) {
    yield* run(
      db
        .insertInto('workspaces')
        .values({
          project_id: p.id,
          id: w.id,
          name: w.name,
          routing_mode: w.routing_mode,
          routing_mode_default: NEW_WORKSPACE_ROUTING_DEFAULT,
          zero_data_retention: w.zero_data_retention ? 1 : 0,
          operational: w.operational ? 1 : 0,
          created_at: now,
        })
        .onConflict((oc) =>
          oc.columns(['project_id', 'id']).doUpdateSet((eb) => ({
            name: eb.ref('excluded.name'),
            routing_mode: eb.case().when('workspaces.routing_mode_set_at', 'is', null).then(eb.ref('excluded.routing_mode')).else(eb.ref('workspaces.routing_mode')).end(),
            zero_data_retention: eb.ref('excluded.zero_data_retention'),
            operational: eb.ref('excluded.operational'),
            deleted_at: null,
          })),
        ),
    );
  }
}

/** Returns how many were marked deleted. */
function* syncEndpoints(db: Db, p: ProjectConfig, now: number): SqlProgram<number> {
  // Deleted first: an endpoint re-declared under a new id but its old slug must not collide with its
  // previous row on the live-slug unique index.
  const keep = p.endpoints.map((e) => e.id);
  let others = db.updateTable('endpoints').set({ deleted_at: now }).where('project_id', '=', p.id).where('deleted_at', 'is', null);
  if (keep.length > 0) others = others.where('id', 'not in', keep);
  const deleted = yield* run(others);
  const allWorkspaces = p.workspaces.map((w) => w.id);
  for (const e of p.endpoints) {
    const row = {
      id: e.id,
      project_id: p.id,
      slug: e.slug,
      name: e.name,
      kind: e.kind,
      tier: e.tier,
      status: e.status,
      region: e.region,
      workspace_ids: toJson(e.workspaces ?? allWorkspaces),
      model: toJson(e.model),
      upstream: toJson(e.upstream),
      router: e.router ? toJson(e.router) : null,
      created_at: now,
      updated_at: now,
    };
    const { id: _id, created_at: _created, ...updated } = row;
    yield* run(
      db
        .insertInto('endpoints')
        .values(row)
        .onConflict((oc) => oc.column('id').doUpdateSet({ ...updated, deleted_at: null })),
    );
  }
  return deleted;
}

/** Returns how many config keys the file dropped were revoked. */
function* syncKeys(db: Db, reads: CatalogReads, keys: Keys, p: ProjectConfig, now: number): SqlProgram<number> {
  const declaredIds: string[] = [];
  for (const k of p.keys) {
    const hash = hashKeyValue(k.value);
    const existing = (yield* first(reads.keyIdOfHash(hash)))?.key_id;
    const fields = declaredFields(k, existing ?? newKeyId());
    if (existing) yield* updateDeclared(db, fields);
    else yield* keys.insertWithSecret({ ...fields, projectId: p.id, prefix: keyPrefix(k.value), userId: null, issuedBy: null, source: 'config', createdAt: now }, hash);
    declaredIds.push(fields.id);
  }
  return yield* revokeUndeclared(db, p.id, declaredIds, now);
}

function declaredFields(k: KeyConfig, id: string): DeclaredKeyFields {
  return {
    id,
    name: k.name ?? null,
    scopes: k.scopes,
    allowedIps: k.allowed_ips,
    blockedIps: k.blocked_ips,
    expiresAt: k.expires_at ? Date.parse(k.expires_at) : null,
    quotaRequests: k.quota_requests,
    quotaWindow: k.quota_window,
    endpointId: k.endpoint_id ?? null,
    allowedWorkspaceIds: k.allowed_workspace_ids ?? null,
  };
}
