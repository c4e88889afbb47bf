/**
 * `/{project}/v1/management/budgets...`: token budgets per endpoint and per workspace (docs/decisions.md
 * "Budgets"). GET lists every endpoint and workspace with its caps and spend; PUT replaces one budget
 * (stored in the usage store, SQLite or PostgreSQL, overriding the config file); DELETE drops the override so
 * the file's caps apply again.
 * Management scope and rate limit, 16 KiB bodies.
 */
import type { EndpointConfig } from '../config.js';
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import { BUDGET_WINDOWS, WARNING_PERCENT, type BudgetCaps, type BudgetLevel, type BudgetWindow } from '../core/limits/budget-caps.js';
import type { BudgetDescription } from '../core/limits/budgets.js';
import type { BudgetCapsStore } from '../core/store/usage-store.js';
import { GatewayError } from '../errors.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { parseBudget } from '../schemas/management-keys.js';
import { keyed, MANAGEMENT_BODY_LIMIT } from './guard.js';
import type { Services } from '../app/services.js';

const WORKSPACE_ID = /^ws_[0-9a-f]+$/;

export interface BudgetServices extends Services {
  readonly budgetStore: BudgetCapsStore;
  /** The endpoint's prices in the config file (the dashboard's endpoints page reads them too): a money cap on one without is never reached. */
  readonly pricesOf: (endpointId: string) => EndpointConfig['prices'];
}

/** The money caps' fields, as the body names them. */
const CENT_FIELDS = [['hourlyCents', 'hourly_cents'], ['dailyCents', 'daily_cents'], ['hardCapCents', 'hard_cap_cents']] as const;

function capOf(c: BudgetCaps | null, w: BudgetWindow): number | null {
  if (!c) return null;
  return w === 'hourly' ? c.hourlyTokens : w === 'daily' ? c.dailyTokens : c.hardCapTokens;
}

/** A money cap in nano-dollars (the unit of the spend), or null. */
function nanoCapOf(c: BudgetCaps | null, w: BudgetWindow): number | null {
  const cents = !c ? null : w === 'hourly' ? c.hourlyCents : w === 'daily' ? c.dailyCents : c.hardCapCents;
  return cents === null || cents === undefined ? null : cents * NANOS_PER_CENT;
}

const NANOS_PER_CENT = 10_000_000;
const toCents = (nanos: number): number => nanos / NANOS_PER_CENT;

export function budgetWire(level: BudgetLevel, targetId: string, d: BudgetDescription) {
  const spent = { hourly: d.spend.hourly, daily: d.spend.daily, hardCap: d.spend.total };
  const spentNanos = { hourly: d.spendNanos.hourly, daily: d.spendNanos.daily, hardCap: d.spendNanos.total };
  // A window is near or at its limit when either of its caps (tokens or money) is.
  const windows = (test: (spent: number, cap: number) => boolean): BudgetWindow[] =>
    BUDGET_WINDOWS.filter((w) => {
      const cap = capOf(d.caps, w);
      const nanoCap = nanoCapOf(d.caps, w);
      return (cap !== null && test(spent[w], cap)) || (nanoCap !== null && test(spentNanos[w], nanoCap));
    });
  return {
    object: 'budget' as const,
    level,
    target_id: targetId,
    hourly_tokens: d.caps?.hourlyTokens ?? null,
    daily_tokens: d.caps?.dailyTokens ?? null,
    hard_cap_tokens: d.caps?.hardCapTokens ?? null,
    hourly_cents: d.caps?.hourlyCents ?? null,
    daily_cents: d.caps?.dailyCents ?? null,
    hard_cap_cents: d.caps?.hardCapCents ?? null,
    source: d.source,
    spent: {
      hourly_tokens: d.spend.hourly,
      daily_tokens: d.spend.daily,
      total_tokens: d.spend.total,
      // Cents of the priced turns (unpriced turns cost 0), fractional: the ledger keeps nano-dollars.
      hourly_cents: toCents(d.spendNanos.hourly),
      daily_cents: toCents(d.spendNanos.daily),
      total_cents: toCents(d.spendNanos.total),
    },
    warning_windows: windows((s, cap) => s * 100 >= cap * WARNING_PERCENT),
    exhausted_windows: windows((s, cap) => s >= cap),
  };
}

export function managementBudgetsRoutes(services: BudgetServices): RouteDef[] {
  const { budgets, budgetStore, catalog } = services;
  const def = (method: RouteDef['method'], pattern: string, handle: (ctx: RouteContext, auth: AuthenticatedKey) => Promise<void> | void): RouteDef =>
    keyed(services, 'management', { method, pattern: `/:project/v1/management/budgets${pattern}`, family: 'management', bodyLimit: MANAGEMENT_BODY_LIMIT, handle });

  /** The budget's target, checked to exist in the key's project. */
  const target = (ctx: RouteContext, projectId: string, level: BudgetLevel): { projectId: string; targetId: string } => {
    if (level === 'endpoint') {
      const id = ctx.req.params.endpoint_id ?? '';
      if (!catalog.endpoints(projectId).some((e) => e.id === id)) {
        throw new GatewayError('endpoint_not_found', { message: `Project ${projectId} has no endpoint with id ${JSON.stringify(id)}.` });
      }
      return { projectId, targetId: id };
    }
    const id = ctx.req.params.workspace_id ?? '';
    if (!WORKSPACE_ID.test(id)) {
      throw new GatewayError('invalid_workspace_id', { param: 'workspace_id', message: `${JSON.stringify(id)} is not a workspace id: workspace ids have the form ws_<hex>.` });
    }
    if (!catalog.workspaces(projectId).has(id)) {
      throw new GatewayError('workspace_not_found', { param: 'workspace_id', message: `Project ${projectId} has no workspace ${id}.` });
    }
    return { projectId, targetId: id };
  };
  const describe = (level: BudgetLevel, t: { projectId: string; targetId: string }) =>
    budgetWire(level, t.targetId, budgets.describe(level, t.projectId, t.targetId, services.now()));

  const perTarget = (level: BudgetLevel, segment: string, param: string): RouteDef[] => [
    def('GET', `/${segment}/:${param}`, (ctx, auth) => ctx.reply.json(200, describe(level, target(ctx, auth.project.id, level)))),
    def('PUT', `/${segment}/:${param}`, async (ctx, auth) => {
      const t = target(ctx, auth.project.id, level);
      const caps = parseBudget(await ctx.req.json());
      // As the config file refuses it at start: an unpriced endpoint's turns cost nothing, so the cap would never bind.
      const moneyField = level === 'endpoint' && services.pricesOf(t.targetId) === undefined ? CENT_FIELDS.find(([k]) => caps[k] !== null && caps[k] !== undefined) : undefined;
      if (moneyField) {
        throw new GatewayError('invalid_request', { param: moneyField[1], message: `${moneyField[1]} needs prices on the endpoint (its turns cost nothing without them); set prices in the config file, or cap tokens instead.` });
      }
      await budgetStore.putBudget({ projectId: t.projectId, level, targetId: t.targetId, caps }, services.now());
      budgets.setApiCaps(level, t.projectId, t.targetId, caps);
      ctx.reply.json(200, describe(level, t));
    }),
    def('DELETE', `/${segment}/:${param}`, async (ctx, auth) => {
      const t = target(ctx, auth.project.id, level);
      await budgetStore.removeBudget(t.projectId, level, t.targetId);
      budgets.setApiCaps(level, t.projectId, t.targetId, undefined);
      ctx.reply.json(200, describe(level, t));
    }),
  ];

  return [
    def('GET', '', (ctx, auth) => {
      const projectId = auth.project.id;
      const data = [
        ...catalog.endpoints(projectId).map((e) => describe('endpoint', { projectId, targetId: e.id })),
        ...[...catalog.workspaces(projectId).keys()].map((w) => describe('workspace', { projectId, targetId: w })),
      ];
      ctx.reply.json(200, { object: 'list', data });
    }),
    // Not :endpoint / :workspace: those names mean "the request runs there" to the guards.
    ...perTarget('endpoint', 'endpoints', 'endpoint_id'),
    ...perTarget('workspace', 'workspaces', 'workspace_id'),
  ];
}
