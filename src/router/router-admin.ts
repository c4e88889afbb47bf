/**
 * The writes of the semantic-router management API: settings PATCH and rule CRUD, each validated against
 * the project's endpoints (rule targets, fallback endpoint, exclusions) and, for every rule write, the
 * whole rule array (SPEC "Semantic router management"). A rule DELETE is never validated, so a stale rule
 * can always be removed.
 *
 * Each write is a change of the project's state as stored (RouterStore.updateRouterState: validated and
 * written in one transaction that holds the project's row), not of this process's cached copy, so two
 * rule writes at the same moment, on one replica or on two, never lose one.
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

  /** The new rule on its own, named by its request fields (the array check names stored ones by index). */
  function checkRule(projectId: string, rule: RoutingRule, targetSent: boolean): void {
    if (!hasCondition(rule)) throw invalid('query_contains', `${EMPTY_CONDITIONS_MESSAGE}.`);
    // A target the request did not send is checked with the whole array, which names it by index.
    if (!targetSent) return;
    const problem = targetProblem(rule.action.endpoint_id, endpointsOf(projectId));
    if (problem) throw invalid('endpoint_id', `endpoint_id ${problem}.`);
  }

  /** The state with `rules`, once the whole array is valid against the project's endpoints. */
  function withRules(projectId: string, current: ProjectRouterState, rules: RoutingRule[]): ProjectRouterState {
    validateRuleSet(rules, endpointsOf(projectId));
    return { ...current, rules };
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

  function rulesFromPatch(current: ProjectRouterState, patch: SettingsPatch): RoutingRule[] | null {
    const drafts = patch.semantic_router_dynamic_rules;
    if (drafts === undefined) return null;
    if (drafts === null) return [];
    const stored = new Set(current.rules.map((r) => r.id));
    return drafts.map((nested, i) => {
      const draft = draftFromNested(nested);
      if (draft.id !== undefined && !stored.has(draft.id)) {
        throw invalid(`semantic_router_dynamic_rules[${i}].id`, `semantic_router_dynamic_rules[${i}].id names no rule of this project; omit id for a new rule.`);
      }
      return { ...draft, id: draft.id ?? newRuleId() };
    });
  }

  return {
    patchSettings: (projectId, patch) =>
      repo.update(
        projectId,
        (current) => {
          const settings = mergeSettings(projectId, current.settings, patch);
          const rules = rulesFromPatch(current, patch);
          if (rules !== null) validateRuleSet(rules, endpointsOf(projectId));
          return { settings, rules: rules ?? current.rules };
        },
        now(),
      ),
    async createRule(projectId, fields) {
      const rule = ruleFromFields(newRuleId(), fields);
      checkRule(projectId, rule, true);
      await repo.update(projectId, (current) => withRules(projectId, current, [...current.rules, rule]), now());
      return rule;
    },
    async updateRule(projectId, ruleId, fields) {
      let updated = null as RoutingRule | null;
      await repo.update(
        projectId,
        (current) => {
          const index = current.rules.findIndex((r) => r.id === ruleId);
          const base = current.rules[index];
          if (!base) throw new GatewayError('rule_not_found', { message: `Project ${projectId} has no routing rule ${JSON.stringify(ruleId)}.` });
          const rule = ruleFromFields(ruleId, fields, base);
          checkRule(projectId, rule, fields.endpoint_id !== undefined);
          updated = rule;
          return withRules(projectId, current, current.rules.map((r, i) => (i === index ? rule : r)));
        },
        now(),
      );
      if (updated === null) throw new Error('updateRouterState returned without running the change');
      return updated;
    },
    async deleteRule(projectId, ruleId) {
      // Never validated, so a stale rule can always be removed.
      await repo.update(projectId, (current) => (current.rules.some((r) => r.id === ruleId) ? { ...current, rules: current.rules.filter((r) => r.id !== ruleId) } : current), now());
    },
  };
}
