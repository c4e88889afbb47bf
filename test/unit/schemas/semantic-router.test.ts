import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/errors.js';
import { parseRuleCreate, parseRuleUpdate, parseSettingsPatch } from '../../../src/schemas/semantic-router.js';

const EP = '11111111-1111-4111-8111-111111111111';

function refusal(fn: () => unknown): { code: string; param: string | null; message: string } {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return { code: err.code, param: err.param, message: err.message };
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('parseSettingsPatch', () => {
  it('accepts each known key, and null as a reset', () => {
    expect(parseSettingsPatch({ semantic_router_similarity_floor: 0.4, semantic_router_enabled: false, semantic_router_switch_margin: null })).toEqual({
      semantic_router_similarity_floor: 0.4,
      semantic_router_enabled: false,
      semantic_router_switch_margin: null,
    });
  });

  it('refuses an unknown key with unknown_semantic_router_setting naming it', () => {
    expect(refusal(() => parseSettingsPatch({ semantic_router_floor: 0.4 }))).toMatchObject({ code: 'unknown_semantic_router_setting', param: 'semantic_router_floor' });
  });

  it.each([
    ['semantic_router_similarity_floor', 1.5],
    ['semantic_router_proximity_bonus', -0.01],
    ['semantic_router_switch_margin', '0.2'],
    ['semantic_router_enabled', 'false'],
    ['semantic_router_multi_model_enabled', 1],
    ['semantic_router_fallback_endpoint_id', 'chat'],
    ['semantic_router_excluded_endpoint_ids', EP],
  ])('refuses %s = %j without clamping or coercing', (key, value) => {
    expect(refusal(() => parseSettingsPatch({ [key]: value }))).toMatchObject({ code: 'invalid_semantic_router_config', param: key });
  });

  it('names the element of a list that is wrong', () => {
    expect(refusal(() => parseSettingsPatch({ semantic_router_excluded_endpoint_ids: [EP, 'nope'] })).param).toBe('semantic_router_excluded_endpoint_ids[1]');
  });

  it('reads rules in the nested shape and the flat one, naming nested paths', () => {
    const patch = parseSettingsPatch({
      semantic_router_dynamic_rules: [
        { name: 'n', match: { query_contains: ['a'] }, action: { endpoint_id: EP } },
        { name: 'f', query_contains: ['b'], endpoint_id: EP, fallback_to_classification: false },
      ],
    });
    expect(patch.semantic_router_dynamic_rules).toHaveLength(2);
    expect(refusal(() => parseSettingsPatch({ semantic_router_dynamic_rules: [{ match: { query_contains: ['a'] }, action: { endpoint_id: 'x' } }] })).param).toBe(
      'semantic_router_dynamic_rules[0].action.endpoint_id',
    );
    expect(refusal(() => parseSettingsPatch({ semantic_router_dynamic_rules: [{ query_contains: ['a'], endpoint_id: 'x' }] })).param).toBe(
      'semantic_router_dynamic_rules[0].action.endpoint_id',
    );
  });

  it('refuses a body that is not an object', () => {
    expect(refusal(() => parseSettingsPatch([])).code).toBe('invalid_semantic_router_config');
  });
});

describe('rule bodies', () => {
  it('takes the flat create shape and refuses an id', () => {
    expect(parseRuleCreate({ name: 'x', query_contains: ['a'], endpoint_id: EP })).toMatchObject({ endpoint_id: EP });
    expect(refusal(() => parseRuleCreate({ id: 'rule_1', endpoint_id: EP }))).toMatchObject({ code: 'invalid_semantic_router_config', param: 'id' });
  });

  it('caps query_contains at 10 entries of at most 200 characters', () => {
    expect(refusal(() => parseRuleCreate({ query_contains: Array.from({ length: 11 }, () => 'a'), endpoint_id: EP })).param).toBe('query_contains');
    expect(refusal(() => parseRuleCreate({ query_contains: ['ok', 'x'.repeat(201)], endpoint_id: EP })).param).toBe('query_contains[1]');
    expect(parseRuleCreate({ query_contains: ['x'.repeat(200)], endpoint_id: EP }).query_contains).toHaveLength(1);
  });

  it('requires endpoint_id as a UUID and refuses unknown fields', () => {
    expect(refusal(() => parseRuleCreate({ query_contains: ['a'] })).param).toBe('endpoint_id');
    expect(refusal(() => parseRuleCreate({ query_contains: ['a'], endpoint_id: 'model-x' })).param).toBe('endpoint_id');
    expect(refusal(() => parseRuleCreate({ query_contains: ['a'], endpoint_id: EP, model: 'x' })).code).toBe('invalid_semantic_router_config');
  });

  it('refuses clearing min_input_tokens or exact_request_model on update', () => {
    expect(refusal(() => parseRuleUpdate({ min_input_tokens: null }))).toMatchObject({ code: 'invalid_semantic_router_config', param: 'min_input_tokens' });
    expect(refusal(() => parseRuleUpdate({ exact_request_model: null })).param).toBe('exact_request_model');
    expect(parseRuleUpdate({ priority: 3 })).toEqual({ priority: 3 });
  });
});
