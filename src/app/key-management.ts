/**
 * API key management (SPEC "Key management", "API key" states, Authentication 10-11): list, get, create,
 * revoke, rotate. `POST/GET/DELETE /{project}/v1/management/api-keys...` (routes/management-keys.ts), the
 * dashboard's keys page (dashboard/pages/keys-page.ts) and `switchboard keys` (cli-keys-store.ts, for the
 * wire shape and rules) run these, through the catalog port (SQLite or PostgreSQL). Every change is
 * committed before it returns and the in-memory catalog has reloaded, so it holds from the next request on.
 */
import { KeyRequestError, mintKey, rotationReachRefusal, type KeyRequest, type NewKeyRecord, type Reach } from '../core/auth/key-request.js';
import { hashKeyValue, keyPrefix, mintKeyValue } from '../core/auth/key-token.js';
import type { Scope } from '../config.js';
import type { ApiKeyRecord, ProjectRecord } from '../core/records.js';
import type { CatalogStore } from '../core/store/catalog-store.js';
import { GatewayError } from '../errors.js';
import type { Catalog } from '../store/catalog.js';

/** SPEC "Limits": API key rotation grace. */
export const ROTATION_GRACE_MS = 24 * 60 * 60 * 1000;

const seconds = (ms: number | null): number | null => (ms === null ? null : Math.floor(ms / 1000));

export function keyStatus(k: ApiKeyRecord, now: number): 'active' | 'revoked' | 'expired' {
  if (k.revokedAt !== null && k.revokedAt <= now) return 'revoked';
  if (k.expiresAt !== null && k.expiresAt <= now) return 'expired';
  return 'active';
}

/** SPEC's key fields plus status and times (Unix seconds); never the value or its hash. */
export function apiKeyWire(k: ApiKeyRecord, now: number, previousValidUntil: number | null = null) {
  const status = keyStatus(k, now);
  return {
    id: k.id,
    object: 'api_key' as const,
    name: k.name,
    prefix: k.prefix,
    status,
    scopes: k.scopes,
    allowed_ips: k.allowedIps,
    blocked_ips: k.blockedIps,
    expires_at: seconds(k.expiresAt),
    quota_requests: k.quotaRequests,
    quota_window: k.quotaWindow,
    endpoint_id: k.endpointId,
    allowed_workspace_ids: k.allowedWorkspaceIds,
    source: k.source,
    created_at: seconds(k.createdAt),
    revoked_at: seconds(k.revokedAt),
    // When a rotated-out value still authenticates (SPEC Authentication 11), until when. Revocation and
    // expiry end every value of the key at once (SPEC "API key" states), so a grace is shown only while active.
    previous_value_valid_until: status === 'active' && previousValidUntil !== null && previousValidUntil > now ? seconds(previousValidUntil) : null,
  };
}

export type ApiKeyWire = ReturnType<typeof apiKeyWire>;
/** The create and rotate answers: the key and its value, shown this once. */
export type ApiKeyWithValue = ApiKeyWire & { readonly value: string };

/**
 * Where a new key comes from. `valueSegment` is the second part of the value: `mgmt` through the API, the
 * project slug in the dashboard (SPEC "API key"). `owner`: a dashboard user, who may confine the key only
 * to workspaces that user can read (SPEC Authentication 10); the key then belongs to that user. `issuer`:
 * who receives the value (ApiKeyRecord.issuedBy): the API key that asked, or the dashboard user.
 */
export interface KeyOrigin {
  readonly source: NewKeyRecord['source'];
  readonly valueSegment: string;
  readonly owner?: { readonly userId: string; readonly readable: 'all' | readonly string[] };
  readonly issuer: string;
}

export interface KeyManagementDeps {
  readonly keys: Pick<CatalogStore, 'findInProject' | 'listForProject' | 'rotatedValuesValidUntil' | 'insert' | 'revoke' | 'rotate'>;
  readonly catalog: Pick<Catalog, 'endpoints' | 'workspaces' | 'reload'>;
  readonly now: () => number;
}

/** Who rotates a key: who receives the value (KeyRotation.issuedBy), their user, what they reach. */
export interface KeyRotator {
  readonly issuer: string;
  readonly userId: string | null;
  readonly reach: Reach;
}

export function createKeyManagement({ keys, catalog, now }: KeyManagementDeps) {
  const find = async (projectId: string, keyId: string): Promise<ApiKeyRecord> => {
    const key = await keys.findInProject(projectId, keyId);
    if (!key) throw new GatewayError('api_key_not_found', { message: `Project ${projectId} has no API key ${JSON.stringify(keyId)}.` });
    return key;
  };
  /** The key as stored now, with the end of grace of its rotated-out values. */
  const current = async (projectId: string, keyId: string, at: number): Promise<ApiKeyWire> => {
    const key = await keys.findInProject(projectId, keyId);
    if (!key) throw new GatewayError('api_key_not_found');
    return apiKeyWire(key, at, (await keys.rotatedValuesValidUntil(projectId)).get(key.id) ?? null);
  };

  return {
    async list(projectId: string): Promise<ApiKeyWire[]> {
      const at = now();
      const [grace, listed] = await Promise.all([keys.rotatedValuesValidUntil(projectId), keys.listForProject(projectId)]);
      return listed.map((k) => apiKeyWire(k, at, grace.get(k.id) ?? null));
    },

    /**
     * Key id -> the user who owns it (dashboard keys), or null. Not on the wire (SPEC's key fields do not
     * include it); the dashboard shows it, since an owned key's reach follows its owner.
     */
    async owners(projectId: string): Promise<ReadonlyMap<string, string | null>> {
      return new Map((await keys.listForProject(projectId)).map((k) => [k.id, k.userId]));
    },

    async get(projectId: string, keyId: string): Promise<ApiKeyWire> {
      return current(projectId, (await find(projectId, keyId)).id, now());
    },

    /** Checks the request against the project (400 invalid_request naming the field), stores the key. */
    async create(project: ProjectRecord, request: KeyRequest, origin: KeyOrigin): Promise<ApiKeyWithValue> {
      const at = now();
      let minted;
      try {
        const context = { project, endpoints: catalog.endpoints(project.id), workspaces: catalog.workspaces(project.id), now: at };
        if (origin.owner) checkOwnerCanRead(request, origin.owner.readable);
        minted = mintKey(request, context, { source: origin.source, valueSegment: origin.valueSegment });
      } catch (err) {
        if (err instanceof KeyRequestError) throw new GatewayError('invalid_request', { param: err.field, message: `${err.field} ${err.message}.` });
        throw err;
      }
      const record = { ...minted.record, userId: origin.owner?.userId ?? null, issuedBy: origin.issuer };
      await keys.insert(record, minted.hash);
      await catalog.reload();
      return { ...(await current(project.id, record.id, at)), value: minted.value };
    },

    /** Permanent (SPEC "API key" states); repeating it changes nothing and answers the same. */
    async revoke(projectId: string, keyId: string, reason: 'api' | 'dashboard' = 'api'): Promise<ApiKeyWire> {
      const at = now();
      const key = await find(projectId, keyId);
      if (await keys.revoke(key.id, at, reason)) await catalog.reload();
      return current(projectId, key.id, at);
    },

    /**
     * A new value, returned once; the old one authenticates 24 h more (SPEC Authentication 11). `scopes`:
     * the key's new scope list (SPEC Authentication 3), which the value in its grace shares
     * (docs/decisions.md); null keeps them. `rotator` receives the new value, so it may rotate only a key
     * reaching no further than it does (403 workspace_not_allowed).
     */
    async rotate(projectId: string, keyId: string, valueSegment: string, rotator: KeyRotator, scopes: readonly Scope[] | null = null): Promise<ApiKeyWithValue> {
      const at = now();
      const key = await find(projectId, keyId);
      const beyond = rotationReachRefusal(rotator.reach, rotator.userId, key);
      if (beyond) throw new GatewayError('workspace_not_allowed', { message: beyond });
      refuseInactive(key, at);
      // The config file wins on every field it declares at the next start: a change here would not last.
      if (scopes !== null && key.source === 'config') {
        throw new GatewayError('invalid_state', { message: `API key ${key.id} is declared in the config file; change its scopes there.` });
      }
      // SPEC Authentication 10, as at creation: a key confined to workspaces never holds management.
      if (scopes !== null && key.allowedWorkspaceIds !== null && scopes.includes('management')) {
        throw new GatewayError('invalid_request', { param: 'scopes', message: 'scopes cannot include management on a key confined to workspaces (allowed_workspace_ids).' });
      }
      const value = mintKeyValue(valueSegment);
      // The store checks again in its transaction: another process may have revoked the key meanwhile.
      // A key rotating itself stays its own holder: its issuer is unchanged.
      const issuedBy = rotator.issuer === key.id ? undefined : rotator.issuer;
      const rotated = await keys.rotate({ id: key.id, hash: hashKeyValue(value), prefix: keyPrefix(value), now: at, graceUntil: at + ROTATION_GRACE_MS, scopes: scopes ?? undefined, issuedBy });
      if (!rotated) refuseInactive(await find(projectId, keyId), at);
      await catalog.reload();
      return { ...(await current(projectId, key.id, at)), value };
    },
  };
}

export type KeyManagement = ReturnType<typeof createKeyManagement>;

function refuseInactive(key: ApiKeyRecord, at: number): void {
  const status = keyStatus(key, at);
  if (status !== 'active') throw new GatewayError('invalid_state', { message: `API key ${key.id} is ${status}; only an active key can be rotated.` });
}

/** SPEC Authentication 10: a user may confine a key only to workspaces that user can read. */
function checkOwnerCanRead(request: KeyRequest, readable: 'all' | readonly string[]): void {
  if (readable === 'all' || request.allowedWorkspaceIds === null) return;
  request.allowedWorkspaceIds.forEach((w, i) => {
    if (!readable.includes(w)) throw new KeyRequestError(`allowed_workspace_ids[${i}]`, `names workspace ${w}, which you cannot read`);
  });
}
