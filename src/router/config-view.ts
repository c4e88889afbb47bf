/**
 * GET .../semantic-router/config (SPEC "Semantic router management"): the effective configuration.
 * `preferences` (every settings key, effective), the routable endpoints, endpoints that settings or rules
 * reference but that cannot serve, the embedding endpoint, the resolved availability of semantic routing,
 * the deployment defaults, a 7-day usage roll-up of routed turns and the routing_health block.
 */
import { preferencesOf, type DeploymentDefaults, type RoutingHealth } from '../core/routing/settings.js';
import type { RouterSettings } from '../core/routing/types.js';
import type { EndpointRecord } from '../core/records.js';

export interface ConfigViewInput {
  readonly settings: RouterSettings;
  readonly defaults: DeploymentDefaults;
  readonly endpoints: readonly EndpointRecord[];
  readonly embedding: EndpointRecord | null;
  readonly usage: readonly { endpoint_id: string; requests: number; prompt_tokens: number; completion_tokens: number }[];
  readonly health: RoutingHealth;
}

type Availability = 'available' | 'disabled' | 'no_routable_endpoints' | 'single_endpoint' | 'no_embedding_endpoint';

export function configView(v: ConfigViewInput): Record<string, unknown> {
  const { settings, endpoints } = v;
  const excluded = new Set(settings.excludedEndpointIds);
  const routable = endpoints.filter((e) => e.kind === 'chat' && e.status === 'active' && !excluded.has(e.id));
  const byId = new Map(endpoints.map((e) => [e.id, e]));

  const references = new Map<string, string[]>();
  const refer = (id: string | null, by: string): void => {
    if (id !== null) references.set(id, [...(references.get(id) ?? []), by]);
  };
  refer(settings.fallbackEndpointId, 'semantic_router_fallback_endpoint_id');
  refer(settings.plannerEndpointId ?? null, 'semantic_router_planner_endpoint_id');
  settings.rules.forEach((r, i) => refer(r.action.endpoint_id, `semantic_router_dynamic_rules[${i}].action.endpoint_id`));
  const unavailable = [...references].flatMap(([id, by]) => {
    const e = byId.get(id);
    if (e && e.kind === 'chat' && e.status === 'active') return [];
    return [{ endpoint_id: id, slug: e?.slug ?? null, status: e ? e.status : 'not_found', referenced_by: by }];
  });

  let state: Availability = 'available';
  if (!settings.enabled) state = 'disabled';
  else if (routable.length === 0) state = 'no_routable_endpoints';
  else if (routable.length === 1) state = 'single_endpoint';
  else if (!v.embedding) state = 'no_embedding_endpoint';

  const slugOf = (id: string): string | null => byId.get(id)?.slug ?? null;
  const total = (k: 'requests' | 'prompt_tokens' | 'completion_tokens'): number => v.usage.reduce((n, u) => n + (u[k] ?? 0), 0);
  return {
    object: 'semantic_router.config',
    preferences: preferencesOf(settings),
    routable_endpoints: routable.map((e) => ({
      id: e.id,
      slug: e.slug,
      name: e.name,
      model_id: e.model.id,
      region: e.region,
      workspace_ids: e.workspaceIds,
      has_profile: Boolean(e.router && (e.router.description.trim() !== '' || e.router.examples.length > 0)),
    })),
    unavailable_endpoints: unavailable,
    embedding_endpoint: v.embedding ? { present: true, id: v.embedding.id, slug: v.embedding.slug, model_id: v.embedding.model.id } : { present: false, id: null, slug: null, model_id: null },
    availability: { state, semantic_routing_engaged: state === 'available', fails_open: state === 'no_embedding_endpoint' },
    deployment_defaults: {
      semantic_router_enabled: v.defaults.enabled,
      semantic_router_multi_model_enabled: v.defaults.multi_model_enabled,
      semantic_router_similarity_floor: v.defaults.similarity_floor,
      semantic_router_switch_margin: v.defaults.switch_margin,
      semantic_router_proximity_bonus: v.defaults.proximity_bonus,
      semantic_router_fallback_endpoint_id: null,
      semantic_router_planner_endpoint_id: null,
      semantic_router_excluded_endpoint_ids: [],
      semantic_router_dynamic_rules: [],
    },
    usage_7d: {
      window_days: 7,
      routed_requests: total('requests'),
      prompt_tokens: total('prompt_tokens'),
      completion_tokens: total('completion_tokens'),
      by_endpoint: v.usage.map((u) => ({ ...u, slug: slugOf(u.endpoint_id) })),
    },
    routing_health: v.health,
  };
}
