/**
 * `/{project}/v1/management/semantic-router/...` (SPEC "Semantic router management"): config GET/PATCH,
 * rules CRUD, decisions and health. Management scope and rate limit, 16 KiB bodies. Reads of decisions
 * and health first flush the decision log, so a routed turn is visible to the next GET.
 */
import { healthOf, preferencesOf, ZERO_HEALTH, type DeploymentDefaults, type RoutingHealth } from '../core/routing/settings.js';
import { GatewayError } from '../errors.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { configView } from '../router/config-view.js';
import type { RouterAdmin } from '../router/router-admin.js';
import { DECISION_WINDOW_MS } from '../router/router-system.js';
import type { SemanticRouter } from '../router/semantic-router.js';
import type { SloTracker } from '../router/slo-tracker.js';
import { parseRuleCreate, parseRuleUpdate, parseSettingsPatch } from '../schemas/semantic-router.js';
import type { DecisionLog } from '../store/decision-log.js';
import type { DecisionsRepo } from '../store/decisions-repo.js';
import type { PoolReport } from '../upstream/upstream-pool.js';
import { MANAGEMENT_BODY_LIMIT, requireKey } from './guard.js';
import type { Services } from './services.js';

export interface RouterManagementServices extends Services {
  readonly router: SemanticRouter;
  readonly admin: RouterAdmin;
  readonly decisions: DecisionsRepo;
  readonly decisionLog: DecisionLog;
  readonly defaults: DeploymentDefaults;
  readonly routerId: string;
  /** Upstream server health, added to the health route (absent: the field is left out). */
  readonly upstream?: { report(projectId: string): PoolReport[] };
  /** Latency objectives and measurements (issue 14): the health route's `slo_attainment` (absent: left out). */
  readonly slos?: SloTracker;
}

/**
 * The health route's addition to SPEC's fields: whether each endpoint of the project has an upstream
 * server taking requests (the router skips those that have none). Counts, not addresses: the servers'
 * URLs are the operator's (/readyz and the logs have them), not the project's.
 */
function upstreamHealth(reports: readonly PoolReport[]): Record<string, unknown>[] {
  return reports.map((r) => ({
    endpoint_id: r.endpoint_id,
    endpoint_slug: r.endpoint,
    healthy: r.healthy,
    servers_up: r.servers.filter((s) => s.state === 'up').length,
    servers_total: r.servers.length,
  }));
}

/** SPEC "Other limits": decisions limit default 50, clamped to 1-200; non-numeric is 400 invalid_limit. */
export function parseDecisionLimit(raw: string | null): number {
  if (raw === null) return 50;
  const n = raw.trim() === '' ? Number.NaN : Number(raw);
  if (!Number.isFinite(n)) throw new GatewayError('invalid_limit', { param: 'limit', message: `limit must be a number (1 to 200); got ${JSON.stringify(raw.slice(0, 40))}.` });
  return Math.min(200, Math.max(1, Math.trunc(n)));
}

const SEVEN_DAYS_MS = 7 * 24 * 3_600_000;

export function managementSemanticRouterRoutes(services: RouterManagementServices): RouteDef[] {
  const { admin, decisions, decisionLog } = services;
  const route = (method: RouteDef['method'], pattern: string, handle: (ctx: RouteContext, projectId: string) => Promise<void> | void): RouteDef => ({
    method,
    pattern: `/:project/v1/management/semantic-router${pattern}`,
    family: 'management',
    bodyLimit: MANAGEMENT_BODY_LIMIT,
    handle: (ctx) => handle(ctx, requireKey(ctx, services, 'management').project.id),
  });

  /** SPEC "Routing health": zeros when it cannot be computed. */
  async function health(projectId: string): Promise<RoutingHealth> {
    try {
      await decisionLog.flush();
      return healthOf(decisions.countsByReason(projectId, services.now() - DECISION_WINDOW_MS));
    } catch {
      return ZERO_HEALTH;
    }
  }

  return [
    route('GET', '/config', async (ctx, projectId) => {
      const now = services.now();
      ctx.reply.json(
        200,
        configView({
          settings: services.router.settingsOf(projectId),
          defaults: services.defaults,
          endpoints: services.catalog.endpoints(projectId),
          embedding: services.router.embeddingEndpoint(projectId, null),
          usage: decisions.usageByEndpoint(projectId, now - SEVEN_DAYS_MS),
          health: await health(projectId),
        }),
      );
    }),
    route('PATCH', '/config', async (ctx, projectId) => {
      admin.patchSettings(projectId, parseSettingsPatch(await ctx.req.json()));
      ctx.reply.json(200, preferencesOf(services.router.settingsOf(projectId)));
    }),
    route('GET', '/rules', (ctx, projectId) => {
      ctx.reply.json(200, { data: services.router.settingsOf(projectId).rules });
    }),
    route('POST', '/rules', async (ctx, projectId) => {
      ctx.reply.json(201, admin.createRule(projectId, parseRuleCreate(await ctx.req.json())));
    }),
    route('PATCH', '/rules/:rule', async (ctx, projectId) => {
      ctx.reply.json(200, admin.updateRule(projectId, ctx.req.params.rule ?? '', parseRuleUpdate(await ctx.req.json())));
    }),
    route('DELETE', '/rules/:rule', async (ctx, projectId) => {
      await ctx.req.body();
      admin.deleteRule(projectId, ctx.req.params.rule ?? '');
      ctx.reply.empty(204);
    }),
    route('GET', '/decisions', async (ctx, projectId) => {
      const limit = parseDecisionLimit(ctx.req.searchParams().get('limit'));
      await decisionLog.flush();
      const rows = decisions.list(projectId, services.now() - DECISION_WINDOW_MS, limit);
      // A row made by a router this deployment no longer runs names no router.
      for (const row of rows) if (row.router_id !== services.routerId) row.router_id = null;
      ctx.reply.json(200, { data: rows });
    }),
    route('GET', '/health', async (ctx, projectId) => {
      const { upstream, slos } = services;
      const chat = services.catalog.endpoints(projectId).filter((e) => e.kind === 'chat');
      ctx.reply.json(200, {
        ...(await health(projectId)),
        ...(upstream ? { upstreams: upstreamHealth(upstream.report(projectId)) } : {}),
        // Per chat endpoint: its stored objective, the measured medians, and meets / misses / no_data / no_objective.
        ...(slos ? { slo_attainment: slos.report(projectId, chat) } : {}),
      });
    }),
  ];
}
