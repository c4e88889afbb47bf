/**
 * The catalog's rows (catalog-tables.ts) as the port's records. Lists are JSON text on both backends, so
 * one mapping reads either.
 */
import type { Selectable } from 'kysely';
import type { Scope } from '../../config.js';
import { compileIpFilter } from '../../core/auth/ip-filter.js';
import type { ApiKeyRecord, EndpointRecord, KeyCredential, ProjectRecord, WorkspaceRecord } from '../../core/records.js';
import type { IdentityTables } from '../identity/identity-tables.js';
import { fromJson, fromNullableJson } from '../json-column.js';
import type { CatalogTables } from './catalog-tables.js';

/** The catalog's tables and the two identity tables a credential reads its owner's reach from. */
export type CatalogReadTables = CatalogTables & Pick<IdentityTables, 'dashboard_users' | 'dashboard_user_roles'>;

export type ProjectRow = Selectable<CatalogTables['projects']>;
export type WorkspaceRow = Selectable<CatalogTables['workspaces']>;
export type EndpointRow = Selectable<CatalogTables['endpoints']>;
export type KeyRow = Selectable<CatalogTables['api_keys']>;

/** A key with one of its values: when that value stops working, and what its owning user reads now. */
export interface CredentialRow extends KeyRow {
  valid_until: number | null;
  owner_id: string | null;
  owner_role: string | null;
  owner_workspaces: string | null;
}

/** New workspaces default to semantic routing (SPEC Semantic router behaviour 9); stamped once at creation. */
export const NEW_WORKSPACE_ROUTING_DEFAULT = 'semantic';

export const toProject = (r: ProjectRow): ProjectRecord => ({
  id: r.id,
  uuid: r.uuid,
  slug: r.slug,
  name: r.name,
  plan: r.plan,
  requestsPerMinute: r.requests_per_minute,
  tokensPerMinute: r.tokens_per_minute,
  defaultWorkspaceId: r.default_workspace_id,
  createdAt: r.created_at,
});

export const toWorkspace = (r: WorkspaceRow): WorkspaceRecord => ({
  id: r.id,
  projectId: r.project_id,
  name: r.name,
  routingMode: r.routing_mode,
  routingModeDefault: r.routing_mode_default,
  pinnedEndpointId: r.pinned_endpoint_id,
  operational: r.operational === 1,
  zeroDataRetention: r.zero_data_retention === 1,
  createdAt: r.created_at,
});

export const toEndpoint = (r: EndpointRow): EndpointRecord => ({
  id: r.id,
  projectId: r.project_id,
  slug: r.slug,
  name: r.name,
  kind: r.kind,
  tier: r.tier,
  status: r.status,
  region: r.region,
  workspaceIds: fromJson<string[]>(r.workspace_ids),
  model: fromJson<EndpointRecord['model']>(r.model),
  upstream: fromJson<EndpointRecord['upstream']>(r.upstream),
  router: fromNullableJson<EndpointRecord['router']>(r.router),
  createdAt: r.created_at,
});

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
    issuedBy: r.issued_by,
    source: r.source,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
  };
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
