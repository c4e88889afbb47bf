/**
 * Project settings of the semantic router: what a project stored (the keys of the config PATCH, SPEC
 * "Semantic router settings") over the deployment defaults (config file `semantic_router`). A key that is
 * absent from the stored object follows the default, so an explicit null on PATCH simply removes it.
 * Also the health roll-up (SPEC "Routing health"). Pure.
 */
import type { RouteReason, RouterSettings, RoutingRule } from './types.js';

export interface StoredSettings {
  readonly semantic_router_enabled?: boolean;
  readonly semantic_router_multi_model_enabled?: boolean;
  readonly semantic_router_similarity_floor?: number;
  readonly semantic_router_switch_margin?: number;
  readonly semantic_router_proximity_bonus?: number;
  readonly semantic_router_fallback_endpoint_id?: string;
  readonly semantic_router_planner_endpoint_id?: string;
  readonly semantic_router_excluded_endpoint_ids?: readonly string[];
}

export interface DeploymentDefaults {
  readonly enabled: boolean;
  readonly multi_model_enabled: boolean;
  readonly similarity_floor: number;
  readonly switch_margin: number;
  readonly proximity_bonus: number;
}

export function effectiveSettings(stored: StoredSettings, rules: readonly RoutingRule[], d: DeploymentDefaults): RouterSettings {
  return {
    enabled: stored.semantic_router_enabled ?? d.enabled,
    multiModelEnabled: stored.semantic_router_multi_model_enabled ?? d.multi_model_enabled,
    similarityFloor: stored.semantic_router_similarity_floor ?? d.similarity_floor,
    switchMargin: stored.semantic_router_switch_margin ?? d.switch_margin,
    proximityBonus: stored.semantic_router_proximity_bonus ?? d.proximity_bonus,
    fallbackEndpointId: stored.semantic_router_fallback_endpoint_id ?? null,
    plannerEndpointId: stored.semantic_router_planner_endpoint_id ?? null,
    excludedEndpointIds: stored.semantic_router_excluded_endpoint_ids ?? [],
    rules,
  };
}

/** The `preferences` block: every settings key with its effective value (rules in the response shape). */
export function preferencesOf(s: RouterSettings): Record<string, unknown> {
  return {
    semantic_router_enabled: s.enabled,
    semantic_router_multi_model_enabled: s.multiModelEnabled,
    semantic_router_similarity_floor: s.similarityFloor,
    semantic_router_switch_margin: s.switchMargin,
    semantic_router_proximity_bonus: s.proximityBonus,
    semantic_router_fallback_endpoint_id: s.fallbackEndpointId,
    semantic_router_planner_endpoint_id: s.plannerEndpointId ?? null,
    semantic_router_excluded_endpoint_ids: s.excludedEndpointIds,
    semantic_router_dynamic_rules: s.rules,
  };
}

export interface RoutingHealth {
  readonly window_hours: 24;
  readonly decision_count: number;
  readonly classified_count: number;
  readonly matched_count: number;
  readonly sticky_count: number;
  readonly rule_count: number;
  readonly fallback_count: number;
  readonly fallback_pct: number;
}

export const ZERO_HEALTH: RoutingHealth = {
  window_hours: 24,
  decision_count: 0,
  classified_count: 0,
  matched_count: 0,
  sticky_count: 0,
  rule_count: 0,
  fallback_count: 0,
  fallback_pct: 0,
};

/** SPEC "Routing health": classified = matched + sticky + fallback; rules are counted apart. */
export function healthOf(countsByReason: ReadonlyMap<RouteReason | string, number>): RoutingHealth {
  const n = (r: RouteReason): number => countsByReason.get(r) ?? 0;
  let decisions = 0;
  for (const c of countsByReason.values()) decisions += c;
  const classified = n('matched') + n('sticky') + n('fallback');
  return {
    window_hours: 24,
    decision_count: decisions,
    classified_count: classified,
    matched_count: n('matched'),
    sticky_count: n('sticky'),
    rule_count: n('rule'),
    fallback_count: n('fallback'),
    fallback_pct: classified === 0 ? 0 : Math.round((n('fallback') / classified) * 10_000) / 100,
  };
}
