import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../../../src/config.js';
import type { ReasoningOptions } from '../../../../src/core/chat/reasoning.js';
import { decideRoute } from '../../../../src/core/routing/decide.js';
import { applyEligibility, isEligible } from '../../../../src/core/routing/eligibility.js';
import { requestNeeds } from '../../../../src/core/routing/query.js';
import type { RequestNeeds, RouteEndpoint, RouteQuery } from '../../../../src/core/routing/types.js';
import { GatewayError } from '../../../../src/errors.js';
import { A, alpha, B, beta, C, endpoint, input, query, rule, scores, settings } from './fixtures.js';

const D = 'dddddddd-0000-4000-8000-000000000004';

function refusal(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error('expected a GatewayError');
}

/** An endpoint whose model reasons: a level list or on/off, with or without a thinking budget. */
function reasoner(id: string, slug: string, reasoning: ModelConfig['reasoning'], budget = false): RouteEndpoint {
  const base = endpoint(id, slug);
  return { ...base, model: { ...base.model, reasoning, reasoning_budget: budget } };
}

const levels = reasoner(C, 'levels', ['low', 'medium', 'high'], true);
const toggle = reasoner(D, 'toggle', 'on_off');
/** A query whose needs are only the given reasoning options. */
function asking(reasoning: ReasoningOptions, needs: Partial<RequestNeeds> = {}): RouteQuery {
  const q = query();
  return { ...q, needs: { ...q.needs, ...needs, reasoning } };
}

describe('reasoning eligibility filter', () => {
  it('keeps only endpoints whose model reasons for a reasoning_effort turn, and counts the rest', () => {
    const { eligible, dropped, counts } = applyEligibility([alpha, beta, levels, toggle], asking({ reasoning_effort: 'high' }), false);
    expect(eligible.map((e) => e.slug)).toEqual(['levels', 'toggle']);
    expect(counts).toMatchObject({ reasoning: 2, modality: 0, tool_calling: 0 });
    expect(dropped).toEqual([
      { endpoint_id: A, slug: 'alpha', similarity: null, dropped_by: 'reasoning' },
      { endpoint_id: B, slug: 'beta', similarity: null, dropped_by: 'reasoning' },
    ]);
  });

  it('treats reasoning.effort and reasoning.enabled like reasoning_effort', () => {
    expect(applyEligibility([alpha, levels], asking({ reasoning: { effort: 'low' } }), false).eligible).toEqual([levels]);
    expect(applyEligibility([alpha, toggle], asking({ reasoning: { enabled: true } }), false).eligible).toEqual([toggle]);
  });

  it('keeps only models that can enforce a thinking budget for reasoning.max_tokens', () => {
    const { eligible, counts } = applyEligibility([alpha, toggle, levels], asking({ reasoning: { max_tokens: 512 } }), false);
    expect(eligible).toEqual([levels]);
    expect(counts.reasoning).toBe(2);
  });

  it('keeps only models that can turn thinking off for reasoning_effort none', () => {
    expect(applyEligibility([alpha, levels, toggle], asking({ reasoning_effort: 'none' }), false).eligible).toEqual([toggle]);
  });

  it('does not apply when the request asks for no reasoning (exclude and include_reasoning alone ask for nothing)', () => {
    const none = applyEligibility([alpha, levels], query(), false);
    expect(none.eligible).toEqual([alpha, levels]);
    expect(none.counts.reasoning).toBe(0);
    const excludeOnly = requestNeeds({ messages: [{ role: 'user', content: 'x' }], reasoning: { exclude: true }, include_reasoning: false });
    expect(excludeOnly.reasoning).toBeNull();
  });

  it('reads what the request asks for from the body (requestNeeds)', () => {
    const user = { role: 'user', content: 'x' };
    expect(requestNeeds({ messages: [user] }).reasoning).toBeNull();
    expect(requestNeeds({ messages: [user], reasoning_effort: 'low' }).reasoning).toMatchObject({ reasoning_effort: 'low' });
    expect(requestNeeds({ messages: [user], reasoning: { max_tokens: 100 } }).reasoning).toMatchObject({ reasoning: { max_tokens: 100 } });
    expect(requestNeeds({ messages: [user], reasoning: { enabled: false } }).reasoning).not.toBeNull();
  });

  it('answers what a direct route would when no endpoint reasons: 400 unsupported_parameter naming the field sent', () => {
    const effort = refusal(() => applyEligibility([alpha, beta], asking({ reasoning_effort: 'medium' }), false));
    expect(effort).toMatchObject({ status: 400, code: 'unsupported_parameter', param: 'reasoning_effort' });
    expect(effort.message).toContain('No endpoint of this workspace');
    const budget = refusal(() => applyEligibility([alpha, toggle], asking({ reasoning: { max_tokens: 100 } }), false));
    expect(budget).toMatchObject({ code: 'unsupported_parameter', param: 'reasoning.max_tokens' });
  });

  it("prefers a reasoning model's refusal, which lists the values it accepts", () => {
    const err = refusal(() => applyEligibility([alpha, levels], asking({ reasoning_effort: 'none' }), false));
    expect(err).toMatchObject({ code: 'unsupported_value', param: 'reasoning_effort' });
    expect(err.message).toContain('low, medium, high');
  });

  it("passes a contradiction inside the request's own options through unchanged", () => {
    const err = refusal(() => applyEligibility([alpha, levels], asking({ reasoning_effort: 'low', reasoning: { effort: 'high' } }), false));
    expect(err).toMatchObject({ code: 'invalid_request', param: 'reasoning.effort' });
    expect(err.message).not.toContain('No endpoint');
  });

  it('runs after the SPEC filters: a tool-calling refusal comes first', () => {
    const noTools = endpoint(A, 'alpha', { capabilities: [] });
    const q = asking({ reasoning_effort: 'low' }, { tools: true, toolsDeclared: true });
    expect(refusal(() => applyEligibility([noTools], q, false))).toMatchObject({ code: 'unsupported_parameter', param: 'tools' });
  });
});

describe('reasoning in routing decisions', () => {
  const q = asking({ reasoning_effort: 'high' });

  it('classifies among reasoning endpoints only and reports reasoning in filtered_out', () => {
    const d = decideRoute(input({ endpoints: [alpha, beta, levels, toggle], query: q }), scores({ [A]: 0.9, [C]: 0.5, [D]: 0.4 }));
    expect(d).toMatchObject({ endpointId: C, reason: 'matched' });
    expect(d.filteredOut).toEqual({ excluded: 0, modality: 0, context_window: 0, tool_calling: 0, structured_output: 0, reasoning: 2 });
    expect(d.candidates.filter((c) => c.dropped_by === 'reasoning').map((c) => c.slug)).toEqual(['alpha', 'beta']);
  });

  it('goes straight to the one reasoning endpoint left', () => {
    const d = decideRoute(input({ endpoints: [alpha, beta, levels], query: q }), null);
    expect(d).toMatchObject({ endpointId: C, reason: 'single_endpoint' });
    expect(d.filteredOut.reasoning).toBe(2);
  });

  it('applies to concrete routing too', () => {
    const d = decideRoute(input({ endpoints: [alpha, levels], query: q, settings: settings({ enabled: false }) }), null);
    expect(d).toMatchObject({ endpointId: C, reason: 'concrete' });
    expect(d.filteredOut.reasoning).toBe(1);
  });

  it('treats a rule target whose model does not reason as not routable for a reasoning turn', () => {
    const target = rule({ match: { query_contains: ['integrate'] }, action: { endpoint_id: A } });
    expect(isEligible(alpha, q, false)).toBe(false);
    const d = decideRoute(input({ endpoints: [alpha, beta, levels], query: q, settings: settings({ rules: [target] }) }), null);
    expect(d).toMatchObject({ endpointId: C, reason: 'single_endpoint' });
    const strict = rule({ match: { query_contains: ['integrate'] }, action: { endpoint_id: A, fallback_to_classification: false } });
    expect(refusal(() => decideRoute(input({ endpoints: [alpha, levels], query: q, settings: settings({ rules: [strict] }) }), null)).code).toBe('rule_endpoint_not_found');
  });

  it('leaves the one endpoint of a workspace unfiltered: its own turn refuses what it cannot serve', () => {
    const d = decideRoute(input({ endpoints: [alpha], query: q }), null);
    expect(d).toMatchObject({ endpointId: A, reason: 'single_endpoint' });
  });
});
