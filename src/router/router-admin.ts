/**
 * The writes of the semantic-router management API: settings PATCH and rule CRUD, each validated against
 * the project's endpoints (rule targets, fallback endpoint, exclusions) and, for every rule write, the
 * whole rule array (SPEC "Semantic router management"). A rule DELETE is never validated, so a stale rule
 * can always be removed.
 *
 * Each write reads the project's state, changes it and saves it whole: this process runs one write at a
 * time (a queue), so two concurrent rule writes do not lose one. Replicas sharing PostgreSQL are not
 * serialized against each other: the last save of a project wins.
 */
import { randomBytes } from 'node:crypto';
import { EMPTY_CONDITIONS_MESSAGE, hasCondition, targetProblem, validateRuleSet } from '../core/routing/rule-set.js';
import type { StoredSettings } from '../core/routing/settings.js';
import type { RoutingRule } from '../core/routing/types.js';
import { GatewayError } from '../errors.js';
import { draftFromNested, ruleFromFields, type RuleCreate, type RuleUpdate, type SettingsPatch } from '../schemas/semantic-router.js';
import type { Catalog } from '../store/catalog.js';
import type { ProjectRouterState } from '../core/store/router-store.js';
import type { RouterSettingsCache } from './router-state.js';

export interface RouterAdmin {
  patchSettings(projectId: string, patch: SettingsPatch): Promise<ProjectRouterState>;
  createRule(projectId: string, fields: RuleCreate): Promise<RoutingRule>;
  updateRule(projectId: string, ruleId: string, fields: RuleUpdate): Promise<RoutingRule>;
  deleteRule(projectId: string, ruleId: string): Promise<void>;
}

export function newRuleId(): string {
  return `rule_${randomBytes(12).toString('hex')}`;
}

const invalid = (param: string, message: string): GatewayError => new GatewayError('invalid_semantic_router_config', { param, message });

export function createRouterAdmin(catalog: Catalog, repo: RouterSettingsCache, now: () => number): RouterAdmin {
  const endpointsOf = (projectId: string) => catalog.endpoints(projectId);
  /** The write in progress: the next one reads the state after it. */
  let tail: Promise<unknown> = Promise.resolve();
  function serially<R>(write: () => Promise<R>): Promise<R> {
    const result = tail.then(write, write);
    tail = result.catch(() => undefined);
    return result;
  }

  /** The new rule on its own, named by its request fields (the array check names stored ones by index). */
  function checkRule(projectId: string, rule: RoutingRule, targetSent: boolean): void {
    if (!hasCondition(rule)) throw invalid('query_contains', `${EMPTY_CONDITIONS_MESSAGE}.`);
    // A target the request did not send is checked with the whole array, which names it by index.
    if (!targetSent) return;
    const problem = targetProblem(rule.action.endpoint_id, endpointsOf(projectId));
    if (problem) throw invalid('endpoint_id', `endpoint_id ${problem}.`);
  }

  async function saveRules(projectId: string, rules: readonly RoutingRule[]): Promise<void> {
    validateRuleSet(rules, endpointsOf(projectId));
    await repo.save(projectId, { ...repo.get(projectId), rules }, now());
  }

  function mergeSettings(projectId: string, current: StoredSettings, patch: SettingsPatch): StoredSettings {
    const next: Record<string, unknown> = { ...current };
    for (const [key, value] of Object.entries(patch)) {
      if (key === 'semantic_router_dynamic_rules') continue;
      if (value === null) delete next[key];
      else next[key] = value;
    }
    const fallback = patch.semantic_router_fallback_endpoint_id;
    if (typeof fallback === 'string') {
      const problem = targetProblem(fallback, endpointsOf(projectId));
      if (problem) throw invalid('semantic_router_fallback_endpoint_id', `semantic_router_fallback_endpoint_id ${problem}.`);
    }
    const planner = patch.semantic_router_planner_endpoint_id;
    if (typeof planner === 'string') {
      const problem = targetProblem(planner, endpointsOf(projectId));
      if (problem) throw invalid('semantic_router_planner_endpoint_id', `semantic_router_planner_endpoint_id ${problem}.`);
    }
    const known = new Set(endpointsOf(projectId).map((e) => e.id));
    patch.semantic_router_excluded_endpoint_ids?.forEach((id, i) => {
      if (!known.has(id)) throw invalid(`semantic_router_excluded_endpoint_ids[${i}]`, `semantic_router_excluded_endpoint_ids[${i}] names no endpoint of this project (${id}).`);
    });
    return next as StoredSettings;
  }

  function rulesFromPatch(projectId: string, patch: SettingsPatch): RoutingRule[] | null {
    const drafts = patch.semantic_router_dynamic_rules;
    if (drafts === undefined) return null;
    if (drafts === null) return [];
    const stored = new Set(repo.get(projectId).rules.map((r) => r.id));
    return drafts.map((nested, i) => {
      const draft = draftFromNested(nested);
      if (draft.id !== undefined && !stored.has(draft.id)) {
        throw invalid(`semantic_router_dynamic_rules[${i}].id`, `semantic_router_dynamic_rules[${i}].id names no rule of this project; omit id for a new rule.`);
      }
      return { ...draft, id: draft.id ?? newRuleId() };
    });
  }

  return {
    patchSettings: (projectId, patch) => serially(async () => {
      const current = repo.get(projectId);
      const settings = mergeSettings(projectId, current.settings, patch);
      const rules = rulesFromPatch(projectId, patch);
      if (rules !== null) validateRuleSet(rules, endpointsOf(projectId));
      const next = { settings, rules: rules ?? current.rules };
      await repo.save(projectId, next, now());
      return next;
    }),
    createRule: (projectId, fields) => serially(async () => {
      const rule = ruleFromFields(newRuleId(), fields);
      checkRule(projectId, rule, true);
      await saveRules(projectId, [...repo.get(projectId).rules, rule]);
      return rule;
    }),
    updateRule: (projectId, ruleId, fields) => serially(async () => {
      const rules = repo.get(projectId).rules;
      const index = rules.findIndex((r) => r.id === ruleId);
      const base = rules[index];
      if (!base) throw new GatewayError('rule_not_found', { message: `Project ${projectId} has no routing rule ${JSON.stringify(ruleId)}.` });
      const rule = ruleFromFields(ruleId, fields, base);
      checkRule(projectId, rule, fields.endpoint_id !== undefined);
      await saveRules(projectId, rules.map((r, i) => (i === index ? rule : r)));
      return rule;
    }),
    deleteRule: (projectId, ruleId) => serially(async () => {
      const rules = repo.get(projectId).rules;
      if (rules.some((r) => r.id === ruleId)) await repo.save(projectId, { ...repo.get(projectId), rules: rules.filter((r) => r.id !== ruleId) }, now());
    }),
  };
}
