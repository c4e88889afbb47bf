/**
 * `/{project}/v1/management/api-keys...` (SPEC "Key management", "API key" states, Authentication 10-11):
 * create, list, get, revoke (DELETE), rotate. Management scope and rate limit, 16 KiB bodies. A key value
 * appears only in the create and rotate responses; listings show its prefix. The operations themselves are
 * app/key-management.ts, which the dashboard's keys page runs too.
 */
import { createKeyManagement } from '../app/key-management.js';
import { creationReachRefusal, keyCreationRefusal } from '../core/auth/key-request.js';
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import type { CatalogStore } from '../core/store/catalog-store.js';
import { GatewayError } from '../errors.js';
import { parseJsonBody } from '../http/request.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { parseCreateKey, parseRotateKey } from '../schemas/management-keys.js';
import { keyed, MANAGEMENT_BODY_LIMIT } from './guard.js';
import type { Services } from '../app/services.js';
import type { RoleLookup } from '../app/approval-decisions.js';

// The wire shape and rules, where `switchboard keys` (cli-keys-store.ts) has always found them.
export { apiKeyWire, keyStatus, ROTATION_GRACE_MS } from '../app/key-management.js';

export interface KeyManagementServices extends Services {
  /** Where keys are stored: SQLite or PostgreSQL (main.ts picks). */
  readonly keys: CatalogStore;
  /** A personal key's user's role in the project: only an owner's key may create keys. */
  readonly roleOf: RoleLookup;
}

export function managementKeysRoutes(services: KeyManagementServices): RouteDef[] {
  const manage = createKeyManagement({ keys: services.keys, catalog: services.catalog, now: services.now });
  type Handler = (ctx: RouteContext, auth: AuthenticatedKey) => Promise<void> | void;
  const route = (method: RouteDef['method'], pattern: string, handle: Handler): RouteDef =>
    keyed(services, 'management', {
      method,
      pattern: `/:project/v1/management/api-keys${pattern}`,
      family: 'management',
      bodyLimit: MANAGEMENT_BODY_LIMIT,
      handle,
    });
  const keyId = (ctx: RouteContext): string => ctx.req.params.key ?? '';

  return [
    route('POST', '', async (ctx, { key: creator, project }) => {
      const ownsProject = creator.userId !== null && (await services.roleOf(creator.userId, project.id)) === 'owner';
      const refusal = keyCreationRefusal(creator, ownsProject);
      if (refusal) throw new GatewayError('workspace_not_allowed', { message: refusal });
      const request = parseCreateKey(await ctx.req.json());
      // An owner's personal key reaches what its user reads: the key it creates may not reach further.
      const beyond = creationReachRefusal(creator.allowedWorkspaceIds ?? 'all', request.allowedWorkspaceIds);
      if (beyond) throw new GatewayError('workspace_not_allowed', { param: 'allowed_workspace_ids', message: beyond });
      const created = await manage.create(project, request, { source: 'api', valueSegment: 'mgmt', issuer: creator.id });
      ctx.reply.setHeader('Cache-Control', 'no-store');
      ctx.reply.json(201, created);
    }),
    route('GET', '', async (ctx, { project }) => {
      ctx.reply.json(200, { object: 'list', data: await manage.list(project.id) });
    }),
    route('GET', '/:key', async (ctx, { project }) => {
      ctx.reply.json(200, await manage.get(project.id, keyId(ctx)));
    }),
    route('DELETE', '/:key', async (ctx, { project }) => {
      ctx.reply.json(200, await manage.revoke(project.id, keyId(ctx)));
    }),
    route('POST', '/:key/rotate', async (ctx, { key: rotator, project }) => {
      // No body (or an empty one) rotates as before; a body may carry only `scopes` (SPEC Authentication 3).
      const body = await ctx.req.body();
      const scopes = body.length === 0 ? null : parseRotateKey(parseJsonBody(body));
      const rotated = await manage.rotate(project.id, keyId(ctx), 'mgmt', { issuer: rotator.id, userId: rotator.userId, reach: rotator.allowedWorkspaceIds ?? 'all' }, scopes);
      ctx.reply.setHeader('Cache-Control', 'no-store');
      ctx.reply.json(200, rotated);
    }),
  ];
}
