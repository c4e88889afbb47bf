/**
 * Semantic router management (SPEC "Semantic router management"): the effective configuration, settings
 * PATCH, rule CRUD, decisions and health. The management routes (routes/management-semantic-router.ts) and
 * the dashboard's router page run these, so a rule edited in one is the rule the other reads. Reads of
 * decisions and health first flush the decision log, so a routed turn is visible to the next read.
 */
import { healthOf, preferencesOf, ZERO_HEALTH, type DeploymentDefaults, type RoutingHealth } from '../core/routing/settings.js';
import type { RouterSettings, RoutingRule } from '../core/routing/types.js';
import { configView } from '../router/config-view.js';
import type { DecisionReads } from '../router/decision-reads.js';
import type { RouterAdmin } from '../router/router-admin.js';
import { DECISION_WINDOW_MS } from '../router/router-system.js';
import type { SemanticRouter } from '../router/semantic-router.js';
import type { SloTracker } from '../router/slo-tracker.js';
import type { RuleCreate, RuleUpdate, SettingsPatch } from '../schemas/semantic-router.js';
import type { Catalog } from '../store/catalog.js';
import type { DecisionLog } from '../store/decision-log.js';
import type { PoolReport } from '../upstream/upstream-pool.js';

export interface RouterManagementDeps {
  readonly catalog: Pick<Catalog, 'endpoints'>;
  readonly now: () => number;
  readonly router: SemanticRouter;
  readonly admin: RouterAdmin;
  readonly decisions: DecisionReads;
  readonly decisionLog: DecisionLog;
  readonly defaults: DeploymentDefaults;
  readonly routerId: string;
  /** Upstream server health, added to the health report (absent: the field is left out). */
  readonly upstream?: { report(projectId: string): PoolReport[] };
  /** Latency objectives and measurements (issue 14): the health report's `slo_attainment` (absent: left out). */
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

const SEVEN_DAYS_MS = 7 * 24 * 3_600_000;

export function createRouterManagement(deps: RouterManagementDeps) {
  const { admin, decisions, decisionLog } = deps;

  /** SPEC "Routing health": zeros when it cannot be computed. */
  async function health(projectId: string): Promise<RoutingHealth> {
    try {
      await decisionLog.flush();
      return healthOf(await decisions.countsByReason(projectId, deps.now() - DECISION_WINDOW_MS));
    } catch {
      return ZERO_HEALTH;
    }
  }

  return {
    health,

    /** GET .../config: the effective configuration (router/config-view.ts). */
    async config(projectId: string): Promise<Record<string, unknown>> {
      const now = deps.now();
      return configView({
        settings: deps.router.settingsOf(projectId),
        defaults: deps.defaults,
        endpoints: deps.catalog.endpoints(projectId),
        embedding: deps.router.embeddingEndpoint(projectId, null),
        usage: await decisions.usageByEndpoint(projectId, now - SEVEN_DAYS_MS),
        health: await health(projectId),
      });
    },

    /** PATCH .../config: the resulting settings object (every key, effective). */
    async patchSettings(projectId: string, patch: SettingsPatch) {
      await admin.patchSettings(projectId, patch);
      return preferencesOf(deps.router.settingsOf(projectId));
    },

    /** The effective settings (the project's own, else the deployment defaults) and rules. */
    settings: (projectId: string): RouterSettings => deps.router.settingsOf(projectId),

    /** Stored order, not evaluation order. */
    rules(projectId: string): readonly RoutingRule[] {
      return deps.router.settingsOf(projectId).rules;
    },
    createRule: (projectId: string, fields: RuleCreate): Promise<RoutingRule> => admin.createRule(projectId, fields),
    updateRule: (projectId: string, ruleId: string, fields: RuleUpdate): Promise<RoutingRule> => admin.updateRule(projectId, ruleId, fields),
    /** Succeeds for an unknown rule too (SPEC: DELETE is 204 even for an unknown rule). */
    deleteRule: (projectId: string, ruleId: string): Promise<void> => admin.deleteRule(projectId, ruleId),

    /**
     * The 24-hour window, newest first, with decrypted excerpts (empty when undecryptable, or when the
     * reader may not read the row's workspace: `mayRead`).
     */
    async decisions(projectId: string, limit: number, mayRead: (workspaceId: string | null) => boolean = () => true) {
      await decisionLog.flush();
      const rows = await decisions.list(projectId, deps.now() - DECISION_WINDOW_MS, limit, mayRead);
      // A row made by a router this deployment no longer runs names no router.
      for (const row of rows) if (row.router_id !== deps.routerId) row.router_id = null;
      return rows;
    },

    /** GET .../health: SPEC's counts plus upstream health and SLO attainment where they are wired. */
    async healthReport(projectId: string): Promise<RoutingHealth & Record<string, unknown>> {
      const { upstream, slos } = deps;
      const chat = deps.catalog.endpoints(projectId).filter((e) => e.kind === 'chat');
      return {
        ...(await health(projectId)),
        ...(upstream ? { upstreams: upstreamHealth(upstream.report(projectId)) } : {}),
        // Per chat endpoint: its stored objective, the measured medians, and meets / misses / no_data / no_objective.
        ...(slos ? { slo_attainment: slos.report(projectId, chat) } : {}),
      };
    },
  };
}

export type RouterManagement = ReturnType<typeof createRouterManagement>;
