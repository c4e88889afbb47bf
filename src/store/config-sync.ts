/**
 * The config file declares infrastructure; at every start it is synced into SQLite in one transaction
 * (idempotent upsert). Endpoints removed from the file are marked deleted; bootstrap keys removed from
 * the file are revoked (and come back if re-added). Projects and workspaces are never deleted by a sync:
 * API-created state hangs off them.
 */
import type { Config, KeyConfig, ProjectConfig } from '../config.js';
import { hashKeyValue, keyPrefix, newKeyId } from '../core/auth/key-token.js';
import type { SyncSummary } from '../core/store/catalog-store.js';
import { writeTransaction, type Db } from './db.js';
import { createEndpointsRepo } from './endpoints-repo.js';
import { createKeysRepo, type KeysRepo } from './keys-repo.js';
import { createProjectsRepo } from './projects-repo.js';

export type { SyncSummary } from '../core/store/catalog-store.js';

export function syncConfig(db: Db, config: Config, now: number): SyncSummary {
  const projects = createProjectsRepo(db);
  const endpoints = createEndpointsRepo(db);
  const keys = createKeysRepo(db);
  const summary: SyncSummary = { projects: 0, endpoints: 0, endpointsDeleted: 0, keys: 0, keysRevoked: 0 };

  // Processes started together on one store each sync the same file. Under the write lock taken first,
  // a later sync reads what an earlier one committed (a key's hash is looked up before it is inserted)
  // and updates those rows instead of inserting them twice.
  writeTransaction(db, () => {
    for (const p of config.projects) {
      projects.upsertProject(
        {
          id: p.id,
          slug: p.slug,
          name: p.name ?? p.slug,
          plan: p.plan,
          requestsPerMinute: p.rate_limit.requests_per_minute,
          tokensPerMinute: p.rate_limit.tokens_per_minute,
          defaultWorkspaceId: p.default_workspace ?? null,
        },
        now,
      );
      for (const w of p.workspaces) {
        projects.upsertWorkspace(
          { projectId: p.id, id: w.id, name: w.name, routingMode: w.routing_mode, zeroDataRetention: w.zero_data_retention, operational: w.operational },
          now,
        );
      }
      syncEndpoints(p, endpoints, now, summary);
      syncKeys(p, keys, now, summary);
      summary.projects += 1;
    }
  })();
  return summary;
}

function syncEndpoints(p: ProjectConfig, repo: ReturnType<typeof createEndpointsRepo>, now: number, summary: SyncSummary): void {
  const allWorkspaces = p.workspaces.map((w) => w.id);
  // Deleted first: an endpoint re-declared under a new id but its old slug must not collide with its
  // previous row on the live-slug unique index.
  summary.endpointsDeleted += repo.deleteOthers(p.id, p.endpoints.map((e) => e.id), now);
  for (const e of p.endpoints) {
    repo.upsert(
      {
        id: e.id,
        projectId: p.id,
        slug: e.slug,
        name: e.name,
        kind: e.kind,
        tier: e.tier,
        status: e.status,
        region: e.region,
        workspaceIds: e.workspaces ?? allWorkspaces,
        model: e.model,
        upstream: e.upstream,
        router: e.router ?? null,
      },
      now,
    );
    summary.endpoints += 1;
  }
}

function syncKeys(p: ProjectConfig, repo: KeysRepo, now: number, summary: SyncSummary): void {
  const declaredIds: string[] = [];
  for (const k of p.keys) {
    const hash = hashKeyValue(k.value);
    const existing = repo.keyIdForHash(hash);
    const fields = declaredFields(k, existing ?? newKeyId());
    if (existing) repo.updateDeclared(fields);
    else repo.insert({ ...fields, projectId: p.id, prefix: keyPrefix(k.value), userId: null, source: 'config', createdAt: now }, hash);
    declaredIds.push(fields.id);
    summary.keys += 1;
  }
  summary.keysRevoked += repo.revokeUndeclaredConfigKeys(p.id, declaredIds, now);
}

export function declaredFields(k: KeyConfig, id: string) {
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
