/**
 * A routed turn as a decision row (SPEC "Routing decision row"). The API key is never part of it, in any
 * form. Candidates carry SPEC's fields only (slug, similarity, dropped_by); similarity_score is absent when
 * no similarity was computed (rules, pins, concrete routing, single-endpoint turns).
 */
import type { RouteDecision } from '../core/routing/types.js';
import type { EndpointRecord } from '../core/records.js';
import type { DecisionRecord } from '../store/decision-log.js';

export type ClientMode = 'api' | 'mcp' | 'dashboard';

/** `dashboard` for playground turns; `mcp` when the workspace was named by X-Service-Workspace; else `api`. */
export function clientModeOf(surface: 'api' | 'dashboard', workspaceNamedBy: string): ClientMode {
  if (surface === 'dashboard') return 'dashboard';
  return workspaceNamedBy === 'X-Service-Workspace' ? 'mcp' : 'api';
}

export interface TurnFacts {
  readonly requestId: string;
  readonly projectId: string;
  readonly workspaceId: string | null;
  readonly createdAt: number;
  readonly preview: string;
  readonly routerId: string;
  readonly clientMode: ClientMode;
  readonly userAgent: string | null;
  readonly clientIp: string;
  readonly routeTimeMs: number;
}

const MAX_USER_AGENT = 512;

export function decisionRecord(turn: TurnFacts, decision: RouteDecision, endpoint: EndpointRecord): DecisionRecord {
  return {
    requestId: turn.requestId,
    projectId: turn.projectId,
    workspaceId: turn.workspaceId,
    createdAt: turn.createdAt,
    routeReason: decision.reason,
    preview: turn.preview,
    detail: {
      endpoint_slug: endpoint.slug,
      endpoint_name: endpoint.name,
      ...(decision.scored ? { similarity_score: round(decision.similarity) } : {}),
      matched_keywords: decision.matchedKeywords,
      was_sticky: decision.wasSticky,
      was_fallback: decision.wasFallback,
      rule_id: decision.ruleId,
      evicted_incumbent_id: decision.evictedIncumbentId,
      fallback_reason: decision.fallbackReason,
      filtered_out: decision.filteredOut,
      candidates: decision.candidates.map((c) => ({ slug: c.slug, similarity: round(c.similarity), dropped_by: c.dropped_by })),
      router_id: turn.routerId,
      client_mode: turn.clientMode,
      user_agent: turn.userAgent === null ? null : turn.userAgent.slice(0, MAX_USER_AGENT),
      client_ip: turn.clientIp,
      route_time_ms: Math.round(turn.routeTimeMs * 1000) / 1000,
    },
  };
}

/** Similarities are float32 from the index: six decimals say all they mean. */
function round(x: number | null): number | null {
  return x === null ? null : Math.round(x * 1e6) / 1e6;
}
