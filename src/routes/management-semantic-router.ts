/**
 * `/{project}/v1/management/semantic-router/...` (SPEC "Semantic router management"): config GET/PATCH,
 * rules CRUD, decisions and health. Management scope and rate limit, 16 KiB bodies. The operations are
 * app/router-management.ts, which the dashboard's router page runs too.
 */
import { createRouterManagement, type RouterManagementDeps } from '../app/router-management.js';
import { mayUseWorkspace, type AuthenticatedKey } from '../core/auth/authenticate.js';
import { GatewayError } from '../errors.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { parseRuleCreate, parseRuleUpdate, parseSettingsPatch } from '../schemas/semantic-router.js';
import { keyed, MANAGEMENT_BODY_LIMIT } from './guard.js';
import type { Services } from '../app/services.js';

export type RouterManagementServices = Services & Omit<RouterManagementDeps, 'catalog' | 'now'>;

/**
 * SPEC "Other limits": decisions limit default 50, clamped to 1-200; non-numeric is 400 invalid_limit.
 * Non-numeric is what is not a finite number: `Infinity` is a word Number() happens to read, and a
 * numeral past a double's range (1e400) reads as it; clamping would turn either into 200 silently.
 */
export function parseDecisionLimit(raw: string | null): number {
  if (raw === null) return 50;
  const n = raw.trim() === '' ? Number.NaN : Number(raw);
  if (!Number.isFinite(n)) throw new GatewayError('invalid_limit', { param: 'limit', message: `limit must be a finite number (values outside 1 to 200 are clamped to it); got ${JSON.stringify(raw.slice(0, 40))}.` });
  return Math.min(200, Math.max(1, Math.trunc(n)));
}

export function managementSemanticRouterRoutes(services: RouterManagementServices): RouteDef[] {
  const manage = createRouterManagement(services);
  const route = (method: RouteDef['method'], pattern: string, handle: (ctx: RouteContext, projectId: string, auth: AuthenticatedKey) => Promise<void> | void): RouteDef =>
    keyed(services, 'management', {
      method,
      pattern: `/:project/v1/management/semantic-router${pattern}`,
      family: 'management',
      bodyLimit: MANAGEMENT_BODY_LIMIT,
      handle: (ctx, auth) => handle(ctx, auth.project.id, auth),
    });

  return [
    route('GET', '/config', async (ctx, projectId) => {
      ctx.reply.json(200, await manage.config(projectId));
    }),
    route('PATCH', '/config', async (ctx, projectId) => {
      ctx.reply.json(200, await manage.patchSettings(projectId, parseSettingsPatch(await ctx.req.json())));
    }),
    route('GET', '/rules', (ctx, projectId) => {
      ctx.reply.json(200, { data: manage.rules(projectId) });
    }),
    route('POST', '/rules', async (ctx, projectId) => {
      ctx.reply.json(201, await manage.createRule(projectId, parseRuleCreate(await ctx.req.json())));
    }),
    route('PATCH', '/rules/:rule', async (ctx, projectId) => {
      ctx.reply.json(200, await manage.updateRule(projectId, ctx.req.params.rule ?? '', parseRuleUpdate(await ctx.req.json())));
    }),
    route('DELETE', '/rules/:rule', async (ctx, projectId) => {
      await ctx.req.body();
      await manage.deleteRule(projectId, ctx.req.params.rule ?? '');
      ctx.reply.empty(204);
    }),
    route('GET', '/decisions', async (ctx, projectId, auth) => {
      const limit = parseDecisionLimit(ctx.req.searchParams().get('limit'));
      // SPEC Authentication 4: a management key reads every workspace's prompt text because no principal
      // narrows it. A user's key has one: excerpts from workspaces its user cannot read are hidden, as on
      // the dashboard's router page; so are a whole-project row's.
      const mayRead = (workspaceId: string | null): boolean => (workspaceId === null ? auth.key.allowedWorkspaceIds === null : mayUseWorkspace(auth, workspaceId));
      ctx.reply.json(200, { data: await manage.decisions(projectId, limit, mayRead) });
    }),
    route('GET', '/health', async (ctx, projectId) => {
      ctx.reply.json(200, await manage.healthReport(projectId));
    }),
  ];
}
