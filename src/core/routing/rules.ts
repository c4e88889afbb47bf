/**
 * SPEC behaviour 2 and "Routing rule": the first enabled rule, by descending priority with ties in stored
 * order, whose every condition matches. Pure.
 */
import type { RouteQuery, RoutingRule } from './types.js';

/** Evaluation order: priority descending; Array.prototype.sort is stable, so ties keep stored order. */
export function evaluationOrder(rules: readonly RoutingRule[]): RoutingRule[] {
  return rules.filter((r) => r.enabled).sort((a, b) => b.priority - a.priority);
}

/** Every condition must hold; a rule with no condition never matches (validation refuses one anyway). */
export function ruleMatches(rule: RoutingRule, q: RouteQuery, lowerQuery: string): boolean {
  const { query_contains: words, min_input_tokens: minTokens, exact_request_model: model } = rule.match;
  if (words.length === 0 && minTokens === null && model === null) return false;
  if (!words.every((w) => lowerQuery.includes(w.toLowerCase()))) return false;
  if (minTokens !== null && q.inputTokens < minTokens) return false;
  if (model !== null && q.requestModel !== model) return false;
  return true;
}

export function firstMatchingRule(rules: readonly RoutingRule[], q: RouteQuery): RoutingRule | null {
  const lower = q.text.toLowerCase();
  return evaluationOrder(rules).find((r) => ruleMatches(r, q, lower)) ?? null;
}
