/**
 * THE routing decision (SPEC "Semantic router behaviour" 1-8), as a pure function of the candidates, the
 * settings, the affinity state and the rules. It runs in two phases around the only I/O a decision may
 * need (embedding the query and searching the profiles):
 *
 *   planRoute(input)                -> decided (rule, pin, concrete, single endpoint, fail-open fallback)
 *                                      or classify (the eligible endpoints to score)
 *   finishRoute(plan, similarity)   -> decided (matched, sticky or fallback)
 *
 * decideRoute(input, similarity) runs both, for tests and the bench. Refusals are thrown as GatewayError.
 * Latency objectives (input.sloMisses, issue 14) order classification only: docs/decisions.md "Rerank,
 * SLOs and model aliases".
 */
import { GatewayError } from '../../errors.js';
import { applyEligibility, isEligible } from './eligibility.js';
import { firstMatchingRule } from './rules.js';
import {
  NO_FILTERED,
  type CandidateRow,
  type FallbackReason,
  type FilteredOut,
  type RouteDecision,
  type RouteEndpoint,
  type RouteInput,
  type Similarity,
} from './types.js';

export interface ClassifyPlan {
  readonly kind: 'classify';
  readonly input: RouteInput;
  readonly eligible: readonly RouteEndpoint[];
  readonly dropped: readonly CandidateRow[];
  readonly filteredOut: FilteredOut;
  /** The conversation's endpoint when it is still eligible (scored exactly, even outside the top k). */
  readonly incumbent: RouteEndpoint | null;
  /** Set when the conversation's endpoint can no longer serve it. */
  readonly evictedIncumbentId: string | null;
}

export type RoutePlan = { readonly kind: 'decided'; readonly decision: RouteDecision } | ClassifyPlan;

type DecisionFields = Pick<RouteDecision, 'endpointId' | 'reason'> & Partial<Omit<RouteDecision, 'endpointId' | 'reason'>>;

/**
 * Every decision is built here, each field in one order. A spread of shared defaults (`{ ...BASE, ... }`)
 * gave each decision a hidden class of its own in V8 (a new map per routed turn, seen with --log-ic), and
 * every later read of a decision went through megamorphic lookups.
 */
function decision(f: DecisionFields): RouteDecision {
  return {
    endpointId: f.endpointId,
    reason: f.reason,
    ruleId: f.ruleId ?? null,
    matchedKeywords: f.matchedKeywords ?? [],
    wasSticky: f.wasSticky ?? false,
    wasFallback: f.wasFallback ?? false,
    fallbackReason: f.fallbackReason ?? null,
    evictedIncumbentId: f.evictedIncumbentId ?? null,
    similarity: f.similarity ?? null,
    scored: f.scored ?? false,
    candidates: f.candidates ?? [],
    filteredOut: f.filteredOut ?? NO_FILTERED,
    classified: f.classified ?? false,
  };
}

const decided = (decision: RouteDecision): RoutePlan => ({ kind: 'decided', decision });

export function planRoute(input: RouteInput): RoutePlan {
  const { query, settings, workspace } = input;
  const routable = input.endpoints.filter((e) => e.kind === 'chat' && e.status === 'active');

  // (1) Operator rules: the first match decides; no later rule is evaluated either way.
  const rule = firstMatchingRule(settings.rules, query);
  if (rule) {
    const target = routable.find((e) => e.id === rule.action.endpoint_id);
    if (target && isEligible(target, query, input.videoInputEnabled)) {
      return decided(decision({ endpointId: target.id, reason: 'rule', ruleId: rule.id, matchedKeywords: rule.match.query_contains }));
    }
    if (!rule.action.fallback_to_classification) {
      throw new GatewayError('rule_endpoint_not_found', {
        message: `Routing rule ${rule.id} (${JSON.stringify(rule.name)}) matched, but its endpoint ${rule.action.endpoint_id} cannot serve this request and the rule does not fall back to classification.`,
      });
    }
  }

  // (2) A pinned endpoint on the workspace.
  const pinned = workspace?.pinnedEndpointId ? routable.find((e) => e.id === workspace.pinnedEndpointId) : undefined;
  if (pinned) return decided(decision({ endpointId: pinned.id, reason: 'pinned' }));

  const excluded = new Set(settings.excludedEndpointIds);
  const pool = routable.filter((e) => !excluded.has(e.id));
  if (pool.length === 0) {
    throw new GatewayError('no_routable_endpoints', {
      message: 'This workspace has no routable endpoint: no active chat endpoint serves it (or every one is excluded from routing).',
    });
  }
  // Named fields, not `{ ...counts, excluded }`: that spread made a new hidden class per routed turn.
  const filteredOut = (counts: Omit<FilteredOut, 'excluded'>): FilteredOut => ({
    modality: counts.modality,
    context_window: counts.context_window,
    tool_calling: counts.tool_calling,
    structured_output: counts.structured_output,
    reasoning: counts.reasoning,
    excluded: routable.length - pool.length,
  });

  // (3) The project switch, explicitly false; (4) the workspace mode, else its stamped default.
  const mode = workspace ? (workspace.routingMode ?? workspace.routingModeDefault) : 'semantic';
  if (!settings.enabled || mode === 'concrete') {
    const { eligible, counts } = applyEligibility(pool, query, input.videoInputEnabled);
    return decided(decision({ endpointId: defaultEndpoint(eligible, settings.fallbackEndpointId).id, reason: 'concrete', filteredOut: filteredOut(counts) }));
  }

  // Semantic routing. Exactly one candidate: straight to it, no filters and no embedding call.
  const only = pool.length === 1 ? pool[0] : undefined;
  if (only) return decided(decision({ endpointId: only.id, reason: 'single_endpoint', filteredOut: filteredOut(NO_FILTERED) }));

  const filtered = applyEligibility(pool, query, input.videoInputEnabled);
  const { eligible, counts } = filtered;
  // The candidates a row lists end with every endpoint set aside: the eligibility filters' and the exclusions.
  const dropped: CandidateRow[] = [...filtered.dropped, ...routable.filter((e) => excluded.has(e.id)).map((e): CandidateRow => ({ endpoint_id: e.id, slug: e.slug, similarity: null, dropped_by: 'excluded' }))];
  const incumbent = eligible.find((e) => e.id === input.incumbentId) ?? null;
  const evictedIncumbentId = input.incumbentId !== null && !incumbent ? input.incumbentId : null;
  const plan: ClassifyPlan = { kind: 'classify', input, eligible, dropped, filteredOut: filteredOut(counts), incumbent, evictedIncumbentId };
  const single = eligible.length === 1 ? eligible[0] : undefined;
  if (single) {
    const candidates = [{ endpoint_id: single.id, slug: single.slug, similarity: null, dropped_by: null }, ...dropped];
    return decided(decision({ endpointId: single.id, reason: 'single_endpoint', evictedIncumbentId, candidates, filteredOut: plan.filteredOut }));
  }
  // Fails open (SPEC behaviour 3): two or more candidates and no embedding endpoint -> the default.
  if (!input.hasEmbeddingEndpoint) return decided(fallback(plan, [], 'no_embedding_endpoint', false));
  return plan;
}

interface Ranked {
  readonly e: RouteEndpoint;
  readonly raw: number | null;
  /** Raw score plus the proximity bonus: for ranking only (SPEC behaviour 7). */
  readonly rank: number;
}

export function finishRoute(plan: ClassifyPlan, similarity: Similarity): RouteDecision {
  const { settings, region } = plan.input;
  if (similarity === null) {
    // No similarity (the embedding call or the index failed): keep a conversation where it is, else fail open to the default.
    if (plan.incumbent) return sticky(plan, { e: plan.incumbent, raw: null, rank: 0 }, [], false);
    return fallback(plan, [], 'similarity_unavailable', false);
  }
  // Latency objectives (issue 14): endpoints meeting the turn's objective rank ahead of those missing it;
  // similarity (with the bonus) orders each group. The floor still applies to every candidate.
  const misses = plan.input.sloMisses;
  const missed = (r: Ranked): boolean => misses?.has(r.e.id) === true;
  const ranked: Ranked[] = plan.eligible
    .map((e) => {
      const raw = similarity.get(e.id) ?? null;
      const bonus = e.region === region ? settings.proximityBonus : 0;
      return { e, raw, rank: raw === null ? Number.NEGATIVE_INFINITY : raw + bonus };
    })
    .sort((a, b) => Number(missed(a)) - Number(missed(b)) || b.rank - a.rank || compareSlugs(a.e, b.e));
  const clears = (r: Ranked): boolean => r.raw !== null && r.raw >= settings.similarityFloor;

  if (plan.incumbent) {
    const incumbent = ranked.find((r) => r.e.id === plan.incumbent?.id) as Ranked;
    // An unscored incumbent (no profile) ranks as a zero score, bonus included, symmetric with challengers.
    const incumbentRank = incumbent.raw === null ? (incumbent.e.region === region ? settings.proximityBonus : 0) : incumbent.rank;
    const challenger = ranked.find((r) => r.e.id !== incumbent.e.id && clears(r));
    // A conversation leaves an endpoint missing its objective for one meeting it, margin or not; it never
    // leaves one meeting it for one missing it. Within a group the switch margin decides.
    if (challenger && missed(incumbent) && !missed(challenger)) return matched(plan, challenger, ranked, incumbent.e.id);
    if (!challenger || (missed(challenger) && !missed(incumbent)) || challenger.rank <= incumbentRank + settings.switchMargin) {
      return sticky(plan, incumbent, ranked, true);
    }
    return matched(plan, challenger, ranked, incumbent.e.id);
  }
  const best = ranked.find(clears);
  return best ? matched(plan, best, ranked, plan.evictedIncumbentId) : fallback(plan, ranked, 'below_floor', true);
}

export function decideRoute(input: RouteInput, similarity: Similarity): RouteDecision {
  const plan = planRoute(input);
  return plan.kind === 'decided' ? plan.decision : finishRoute(plan, similarity);
}

function rows(plan: ClassifyPlan, winner: RouteEndpoint, ranked: readonly Ranked[], dropOf: (r: Ranked) => CandidateRow['dropped_by']): CandidateRow[] {
  const score = (id: string): number | null => ranked.find((r) => r.e.id === id)?.raw ?? null;
  const head: CandidateRow = { endpoint_id: winner.id, slug: winner.slug, similarity: score(winner.id), dropped_by: null };
  const rest = ranked.filter((r) => r.e.id !== winner.id).map((r) => ({ endpoint_id: r.e.id, slug: r.e.slug, similarity: r.raw, dropped_by: dropOf(r) }));
  return [head, ...rest, ...plan.dropped];
}

function matched(plan: ClassifyPlan, winner: Ranked, ranked: readonly Ranked[], evicted: string | null): RouteDecision {
  const floor = plan.input.settings.similarityFloor;
  return decision({
    endpointId: winner.e.id,
    reason: 'matched',
    evictedIncumbentId: evicted,
    similarity: winner.raw,
    scored: true,
    candidates: rows(plan, winner.e, ranked, (r) => (r.raw === null || r.raw < floor ? 'below_floor' : 'outranked')),
    filteredOut: plan.filteredOut,
    classified: true,
  });
}

function sticky(plan: ClassifyPlan, incumbent: Ranked, ranked: readonly Ranked[], scored: boolean): RouteDecision {
  const floor = plan.input.settings.similarityFloor;
  return decision({
    endpointId: incumbent.e.id,
    reason: 'sticky',
    wasSticky: true,
    similarity: incumbent.raw,
    scored,
    candidates: rows(plan, incumbent.e, ranked, (r) => (r.raw === null || r.raw < floor ? 'below_floor' : 'switch_margin')),
    filteredOut: plan.filteredOut,
    classified: true,
  });
}

function fallback(plan: ClassifyPlan, ranked: readonly Ranked[], reason: FallbackReason, scored: boolean): RouteDecision {
  const target = defaultEndpoint(plan.eligible, plan.input.settings.fallbackEndpointId);
  // Unscored (no embedding endpoint, similarity unavailable), the eligible endpoints are still the
  // candidates the default was picked among: listed unscored, with what the filters dropped.
  const unscored = (): Ranked[] => plan.eligible.map((e) => ({ e, raw: null, rank: 0 }));
  const candidates = ranked.length > 0 ? rows(plan, target, ranked, () => 'below_floor') : rows(plan, target, unscored(), () => 'fallback');
  return decision({
    endpointId: target.id,
    reason: 'fallback',
    wasFallback: true,
    fallbackReason: reason,
    evictedIncumbentId: plan.evictedIncumbentId,
    similarity: scored ? (ranked.find((r) => r.e.id === target.id)?.raw ?? null) : null,
    scored,
    candidates,
    filteredOut: plan.filteredOut,
    classified: true,
  });
}

/** SPEC behaviour 4: the configured fallback endpoint when it is eligible, else the lowest slug. */
export function defaultEndpoint(eligible: readonly RouteEndpoint[], fallbackId: string | null): RouteEndpoint {
  const configured = fallbackId === null ? undefined : eligible.find((e) => e.id === fallbackId);
  if (configured) return configured;
  const first = [...eligible].sort(compareSlugs)[0];
  if (!first) throw new GatewayError('no_routable_endpoints');
  return first;
}

function compareSlugs(a: RouteEndpoint, b: RouteEndpoint): number {
  return a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0;
}
