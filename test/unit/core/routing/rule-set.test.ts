import { describe, expect, it } from 'vitest';
import { validateRuleSet } from '../../../../src/core/routing/rule-set.js';
import { healthOf } from '../../../../src/core/routing/settings.js';
import { GatewayError } from '../../../../src/errors.js';
import { A, alpha, B, beta, C, endpoint, rule } from './fixtures.js';

const endpoints = [alpha, beta, endpoint(C, 'gamma', { status: 'suspended' }), endpoint('eeeeeeee-0000-4000-8000-000000000005', 'embed', { kind: 'embedding' })];

function paramOf(fn: () => void): string | null {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError && err.code === 'invalid_semantic_router_config') return err.param;
    throw err;
  }
  return 'no error';
}

describe('validateRuleSet', () => {
  it('accepts rules targeting functional generative endpoints, suspended ones included', () => {
    expect(paramOf(() => validateRuleSet([rule({ match: { query_contains: ['x'] }, action: { endpoint_id: A } }), rule({ match: { min_input_tokens: 5 }, action: { endpoint_id: C } })], endpoints))).toBe('no error');
  });

  it('names a stale rule by its index in the array', () => {
    const ok = rule({ match: { query_contains: ['x'] }, action: { endpoint_id: B } });
    const stale = rule({ match: { query_contains: ['y'] }, action: { endpoint_id: 'ffffffff-0000-4000-8000-000000000009' } });
    expect(paramOf(() => validateRuleSet([ok, stale], endpoints))).toBe('semantic_router_dynamic_rules[1].action.endpoint_id');
  });

  it('refuses a non-generative target and a rule without conditions', () => {
    expect(paramOf(() => validateRuleSet([rule({ match: { query_contains: ['x'] }, action: { endpoint_id: 'eeeeeeee-0000-4000-8000-000000000005' } })], endpoints))).toBe(
      'semantic_router_dynamic_rules[0].action.endpoint_id',
    );
    expect(paramOf(() => validateRuleSet([rule({ action: { endpoint_id: A } })], endpoints))).toBe('semantic_router_dynamic_rules[0].match');
  });

  it('allows at most 20 rules', () => {
    const many = Array.from({ length: 21 }, () => rule({ match: { query_contains: ['x'] }, action: { endpoint_id: A } }));
    expect(paramOf(() => validateRuleSet(many.slice(0, 20), endpoints))).toBe('no error');
    expect(paramOf(() => validateRuleSet(many, endpoints))).toBe('semantic_router_dynamic_rules');
  });
});

describe('healthOf', () => {
  it('counts classified turns as matched + sticky + fallback, rules apart', () => {
    expect(healthOf(new Map([['matched', 5], ['sticky', 2], ['fallback', 1], ['rule', 4], ['concrete', 3]]))).toEqual({
      window_hours: 24,
      decision_count: 15,
      classified_count: 8,
      matched_count: 5,
      sticky_count: 2,
      rule_count: 4,
      fallback_count: 1,
      fallback_pct: 12.5,
    });
  });

  it('reports 0 percent when nothing was classified', () => {
    expect(healthOf(new Map()).fallback_pct).toBe(0);
  });
});
