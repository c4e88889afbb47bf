/**
 * SPEC "Semantic router management": rules are revalidated as a whole array on every write, so a stale
 * rule (its endpoint since removed) blocks an edit of another, and the error names it by its index:
 * `semantic_router_dynamic_rules[<index>].action.endpoint_id`. Pure: the endpoints are handed in.
 */
import { GatewayError } from '../../errors.js';
import type { RouteEndpoint, RoutingRule } from './types.js';
import { withArticle } from '../article.js';

export const MAX_RULES_PER_PROJECT = 20;
const ARRAY = 'semantic_router_dynamic_rules';

/**
 * A rule may target a functional generative endpoint of the project: a live chat endpoint whose status is
 * not `error`. A suspended endpoint is a legal target (SPEC); at request time it is not routable, and the
 * rule falls through or answers rule_endpoint_not_found.
 */
export function targetProblem(endpointId: string, endpoints: readonly RouteEndpoint[]): string | null {
  const e = endpoints.find((x) => x.id === endpointId);
  if (!e) return `names no endpoint of this project (${endpointId}); it must be an endpoint id, not a model id or slug`;
  if (e.kind !== 'chat') return `names ${e.slug}, ${withArticle(e.kind)} endpoint; it must name a generative (chat) endpoint`;
  if (e.status === 'error') return `names ${e.slug}, which is in error and cannot serve requests`;
  return null;
}

export function hasCondition(rule: Pick<RoutingRule, 'match'>): boolean {
  return rule.match.query_contains.length > 0 || rule.match.min_input_tokens !== null || rule.match.exact_request_model !== null;
}

export const EMPTY_CONDITIONS_MESSAGE =
  'a rule needs a condition: a non-empty query_contains, min_input_tokens or exact_request_model (a rule matching every request is refused)';

export function validateRuleSet(rules: readonly RoutingRule[], endpoints: readonly RouteEndpoint[]): void {
  if (rules.length > MAX_RULES_PER_PROJECT) {
    throw new GatewayError('invalid_semantic_router_config', {
      param: ARRAY,
      message: `A project may have at most ${MAX_RULES_PER_PROJECT} routing rules; this change would make ${rules.length}.`,
    });
  }
  const ids = new Set<string>();
  rules.forEach((rule, i) => {
    if (ids.has(rule.id)) {
      throw new GatewayError('invalid_semantic_router_config', { param: `${ARRAY}[${i}].id`, message: `${ARRAY}[${i}].id repeats rule ${rule.id}.` });
    }
    ids.add(rule.id);
    if (!hasCondition(rule)) {
      throw new GatewayError('invalid_semantic_router_config', { param: `${ARRAY}[${i}].match`, message: `${ARRAY}[${i}]: ${EMPTY_CONDITIONS_MESSAGE}.` });
    }
    const problem = targetProblem(rule.action.endpoint_id, endpoints);
    if (problem) {
      throw new GatewayError('invalid_semantic_router_config', {
        param: `${ARRAY}[${i}].action.endpoint_id`,
        message: `${ARRAY}[${i}].action.endpoint_id ${problem}. Fix or delete rule ${rule.id} (${JSON.stringify(rule.name)}) first.`,
      });
    }
  });
}
