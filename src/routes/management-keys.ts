/**
 * `/{project}/v1/management/api-keys...` (SPEC "Key management", "API key" states, Authentication 10-11):
 * create, list, get, revoke (DELETE), rotate. Management scope and rate limit, 16 KiB bodies. A key value
 * appears only in the create and rotate responses; listings show its prefix. Every change is committed to
 * SQLite before the response and the credential cache is reloaded, so it holds from the next request on.
 */
import { KeyRequestError, keyCreationRefusal, mintKey } from '../core/auth/key-request.js';
import { hashKeyValue, keyPrefix, mintKeyValue } from '../core/auth/key-token.js';
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import type { ApiKeyRecord } from '../core/records.js';
import { GatewayError } from '../errors.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { parseCreateKey } from '../schemas/management-keys.js';
import type { KeysRepo } from '../store/keys-repo.js';
import { MANAGEMENT_BODY_LIMIT, requireKey } from './guard.js';
import type { Services } from './services.js';

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
  return {
    id: k.id,
    object: 'api_key' as const,
    name: k.name,
    prefix: k.prefix,
    status: keyStatus(k, now),
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
    // When a rotated-out value still authenticates (SPEC Authentication 11), until when.
    previous_value_valid_until: previousValidUntil !== null && previousValidUntil > now ? seconds(previousValidUntil) : null,
  };
}

export interface KeyManagementServices extends Services {
  readonly keys: KeysRepo;
}

export function managementKeysRoutes(services: KeyManagementServices): RouteDef[] {
  const { keys, catalog } = services;
  type Handler = (ctx: RouteContext, auth: AuthenticatedKey, now: number) => Promise<void> | void;
  const route = (method: RouteDef['method'], pattern: string, handle: Handler): RouteDef => ({
    method,
    pattern: `/:project/v1/management/api-keys${pattern}`,
    family: 'management',
    bodyLimit: MANAGEMENT_BODY_LIMIT,
    handle: (ctx) => handle(ctx, requireKey(ctx, services, 'management'), services.now()),
  });
  const findKey = (ctx: RouteContext, projectId: string): ApiKeyRecord => {
    const id = ctx.req.params.key ?? '';
    const key = keys.findInProject(projectId, id);
    if (!key) throw new GatewayError('api_key_not_found', { message: `Project ${projectId} has no API key ${JSON.stringify(id)}.` });
    return key;
  };
  /** The key as stored now, with the end of grace of its rotated-out values. */
  const current = (projectId: string, keyId: string, now: number) => {
    const key = keys.findInProject(projectId, keyId);
    if (!key) throw new GatewayError('api_key_not_found');
    return apiKeyWire(key, now, keys.rotatedValuesValidUntil(projectId).get(key.id) ?? null);
  };

  return [
    route('POST', '', async (ctx, { key: creator, project }, now) => {
      const refusal = keyCreationRefusal(creator);
      if (refusal) throw new GatewayError('workspace_not_allowed', { message: refusal });
      const request = parseCreateKey(await ctx.req.json());
      let minted;
      try {
        const context = { project, endpoints: catalog.endpoints(project.id), workspaces: catalog.workspaces(project.id), now };
        minted = mintKey(request, context, { source: 'api', valueSegment: 'mgmt' });
      } catch (err) {
        if (err instanceof KeyRequestError) throw new GatewayError('invalid_request', { param: err.field, message: `${err.field} ${err.message}.` });
        throw err;
      }
      keys.insert(minted.record, minted.hash);
      catalog.reload();
      ctx.reply.setHeader('Cache-Control', 'no-store');
      ctx.reply.json(201, { ...current(project.id, minted.record.id, now), value: minted.value });
    }),
    route('GET', '', (ctx, { project }, now) => {
      const grace = keys.rotatedValuesValidUntil(project.id);
      ctx.reply.json(200, { object: 'list', data: keys.listForProject(project.id).map((k) => apiKeyWire(k, now, grace.get(k.id) ?? null)) });
    }),
    route('GET', '/:key', (ctx, { project }, now) => {
      ctx.reply.json(200, current(project.id, findKey(ctx, project.id).id, now));
    }),
    // Revoke: permanent (SPEC "API key" states); repeating it changes nothing and answers the same.
    route('DELETE', '/:key', (ctx, { project }, now) => {
      const key = findKey(ctx, project.id);
      if (keys.revoke(key.id, now, 'api')) catalog.reload();
      ctx.reply.json(200, current(project.id, key.id, now));
    }),
    route('POST', '/:key/rotate', (ctx, { project }, now) => {
      const key = findKey(ctx, project.id);
      const status = keyStatus(key, now);
      if (status !== 'active') {
        throw new GatewayError('invalid_state', { message: `API key ${key.id} is ${status}; only an active key can be rotated.` });
      }
      const value = mintKeyValue('mgmt');
      keys.rotate(key.id, hashKeyValue(value), keyPrefix(value), now, now + ROTATION_GRACE_MS);
      catalog.reload();
      ctx.reply.setHeader('Cache-Control', 'no-store');
      ctx.reply.json(200, { ...current(project.id, key.id, now), value });
    }),
  ];
}
