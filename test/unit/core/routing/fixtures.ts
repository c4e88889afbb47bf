/** Builders for routing decisions: three local-ish endpoints, semantic workspace, nothing sticky. */
import type { RouteEndpoint, RouteInput, RouterSettings, RouteQuery, RoutingRule } from '../../../../src/core/routing/types.js';

export const A = 'aaaaaaaa-0000-4000-8000-000000000001';
export const B = 'bbbbbbbb-0000-4000-8000-000000000002';
export const C = 'cccccccc-0000-4000-8000-000000000003';

export function endpoint(id: string, slug: string, extra: Partial<RouteEndpoint> & { capabilities?: string[]; window?: number } = {}): RouteEndpoint {
  const { capabilities, window, ...rest } = extra;
  return {
    id,
    slug,
    name: `Endpoint ${slug}`,
    kind: 'chat',
    status: 'active',
    region: 'local',
    model: {
      id: `model-${slug}`,
      context_window: window ?? 8192,
      capabilities: (capabilities ?? ['tools', 'structured_output']) as RouteEndpoint['model']['capabilities'],
      reasoning: 'none',
      reasoning_budget: false,
    },
    ...rest,
  };
}

export const alpha = endpoint(A, 'alpha');
export const beta = endpoint(B, 'beta');
export const gamma = endpoint(C, 'gamma');

export function settings(extra: Partial<RouterSettings> = {}): RouterSettings {
  return {
    enabled: true,
    multiModelEnabled: true,
    similarityFloor: 0.3,
    switchMargin: 0.1,
    proximityBonus: 0.02,
    fallbackEndpointId: null,
    excludedEndpointIds: [],
    rules: [],
    ...extra,
  };
}

export function query(extra: Partial<Omit<RouteQuery, 'needs'>> & { needs?: Partial<RouteQuery['needs']> } = {}): RouteQuery {
  const { needs, ...rest } = extra;
  return {
    text: 'Please integrate x squared',
    inputTokens: 100,
    maxOutputTokens: null,
    requestModel: 'client-model',
    ...rest,
    needs: { vision: false, audioInput: false, videoInput: false, tools: false, toolsDeclared: false, structuredOutput: false, ...needs },
  };
}

export function input(extra: Partial<RouteInput> = {}): RouteInput {
  return {
    query: query(),
    endpoints: [alpha, beta, gamma],
    settings: settings(),
    workspace: { routingMode: null, routingModeDefault: 'semantic', pinnedEndpointId: null },
    hasEmbeddingEndpoint: true,
    region: 'local',
    videoInputEnabled: false,
    incumbentId: null,
    ...extra,
  };
}

let ruleSeq = 0;
export function rule(extra: Partial<Omit<RoutingRule, 'match' | 'action'>> & { match?: Partial<RoutingRule['match']>; action?: Partial<RoutingRule['action']> } = {}): RoutingRule {
  ruleSeq += 1;
  const { match, action, ...rest } = extra;
  return {
    id: `rule_${ruleSeq}`,
    name: `rule ${ruleSeq}`,
    priority: 0,
    enabled: true,
    ...rest,
    match: { query_contains: [], min_input_tokens: null, exact_request_model: null, ...match },
    action: { endpoint_id: C, fallback_to_classification: true, ...action },
  };
}

/** Raw similarity by endpoint id. */
export const scores = (byId: Record<string, number>): Map<string, number> => new Map(Object.entries(byId));
