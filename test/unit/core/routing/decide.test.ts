import { describe, expect, it } from 'vitest';
import { decideRoute, planRoute } from '../../../../src/core/routing/decide.js';
import { GatewayError } from '../../../../src/errors.js';
import { A, alpha, B, beta, C, endpoint, gamma, input, query, rule, scores, settings } from './fixtures.js';

function refusal(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error('expected a GatewayError');
}

const SEMANTIC_WINS_A = scores({ [A]: 0.8, [B]: 0.4, [C]: 0.2 });

describe('decision order: rules, pin, project switch, workspace mode', () => {
  it('lets a matching rule decide before a pin, a disabled router and concrete mode', () => {
    const d = decideRoute(
      input({
        settings: settings({ enabled: false, rules: [rule({ match: { query_contains: ['integrate'] }, action: { endpoint_id: C } })] }),
        workspace: { routingMode: 'concrete', routingModeDefault: 'semantic', pinnedEndpointId: B },
        hasEmbeddingEndpoint: false,
      }),
      null,
    );
    expect(d).toMatchObject({ endpointId: C, reason: 'rule', matchedKeywords: ['integrate'], candidates: [], classified: false, scored: false });
    expect(d.ruleId).toMatch(/^rule_/);
  });

  it('serves a pinned endpoint before the project switch and the workspace mode', () => {
    const d = decideRoute(input({ settings: settings({ enabled: false }), workspace: { routingMode: 'concrete', routingModeDefault: 'semantic', pinnedEndpointId: B } }), null);
    expect(d).toMatchObject({ endpointId: B, reason: 'pinned', classified: false });
  });

  it('ignores a pin on an endpoint that is no longer routable', () => {
    const paused = endpoint(B, 'beta', { status: 'suspended' });
    const d = decideRoute(input({ endpoints: [alpha, paused, gamma], workspace: { routingMode: null, routingModeDefault: 'semantic', pinnedEndpointId: B } }), SEMANTIC_WINS_A);
    expect(d).toMatchObject({ endpointId: A, reason: 'matched' });
  });

  it('routes concretely when semantic_router_enabled is false, whatever the workspace says', () => {
    const d = decideRoute(input({ settings: settings({ enabled: false }), workspace: { routingMode: 'semantic', routingModeDefault: 'semantic', pinnedEndpointId: null } }), SEMANTIC_WINS_A);
    expect(d).toMatchObject({ endpointId: A, reason: 'concrete', scored: false, classified: false });
  });

  it('routes concretely to the fallback endpoint when one is set and eligible', () => {
    const d = decideRoute(input({ settings: settings({ enabled: false, fallbackEndpointId: C }) }), null);
    expect(d).toMatchObject({ endpointId: C, reason: 'concrete' });
  });

  it('follows an explicit workspace mode over the stamped default', () => {
    expect(decideRoute(input({ workspace: { routingMode: 'concrete', routingModeDefault: 'semantic', pinnedEndpointId: null } }), SEMANTIC_WINS_A).reason).toBe('concrete');
    expect(decideRoute(input({ workspace: { routingMode: 'semantic', routingModeDefault: 'concrete', pinnedEndpointId: null } }), SEMANTIC_WINS_A).reason).toBe('matched');
  });

  it('follows the default stamped at creation when no mode was chosen', () => {
    expect(decideRoute(input({ workspace: { routingMode: null, routingModeDefault: 'concrete', pinnedEndpointId: null } }), SEMANTIC_WINS_A).reason).toBe('concrete');
    expect(decideRoute(input({ workspace: { routingMode: null, routingModeDefault: 'semantic', pinnedEndpointId: null } }), SEMANTIC_WINS_A).reason).toBe('matched');
  });

  it('routes semantically when the request runs project-wide (no workspace)', () => {
    expect(decideRoute(input({ workspace: null }), SEMANTIC_WINS_A).reason).toBe('matched');
  });
});

describe('rules', () => {
  const fire = (rules: ReturnType<typeof rule>[], q = query()) => decideRoute(input({ query: q, settings: settings({ rules }) }), SEMANTIC_WINS_A);

  it('matches query_contains case-insensitively and needs every entry', () => {
    expect(fire([rule({ match: { query_contains: ['INTEGRATE', 'x SQUARED'] } })]).reason).toBe('rule');
    expect(fire([rule({ match: { query_contains: ['integrate', 'cubed'] } })]).reason).toBe('matched');
  });

  it('fires min_input_tokens at or above the estimate, not below', () => {
    expect(fire([rule({ match: { min_input_tokens: 100 } })]).reason).toBe('rule');
    expect(fire([rule({ match: { min_input_tokens: 101 } })]).reason).toBe('matched');
  });

  it('matches exact_request_model exactly and case-sensitively', () => {
    expect(fire([rule({ match: { exact_request_model: 'client-model' } })]).reason).toBe('rule');
    expect(fire([rule({ match: { exact_request_model: 'Client-Model' } })]).reason).toBe('matched');
    expect(fire([rule({ match: { exact_request_model: 'client' } })]).reason).toBe('matched');
  });

  it('needs every condition of a rule to hold', () => {
    expect(fire([rule({ match: { query_contains: ['integrate'], exact_request_model: 'other' } })]).reason).toBe('matched');
    expect(fire([rule({ match: { query_contains: ['integrate'], min_input_tokens: 50, exact_request_model: 'client-model' } })]).reason).toBe('rule');
  });

  it('evaluates by descending priority, ties in stored order, disabled rules skipped', () => {
    const low = rule({ priority: 1, match: { query_contains: ['x'] }, action: { endpoint_id: A } });
    const highOff = rule({ priority: 9, enabled: false, match: { query_contains: ['x'] }, action: { endpoint_id: B } });
    const firstOf5 = rule({ priority: 5, match: { query_contains: ['x'] }, action: { endpoint_id: C } });
    const secondOf5 = rule({ priority: 5, match: { query_contains: ['x'] }, action: { endpoint_id: B } });
    expect(fire([low, highOff, firstOf5, secondOf5])).toMatchObject({ reason: 'rule', ruleId: firstOf5.id, endpointId: C });
    expect(fire([low, highOff, secondOf5, firstOf5])).toMatchObject({ ruleId: secondOf5.id, endpointId: B });
  });

  it('never matches a rule without any condition', () => {
    expect(fire([rule()]).reason).toBe('matched');
  });

  it('falls through to classification when the target is not routable, without evaluating a later rule', () => {
    const paused = endpoint(C, 'gamma', { status: 'suspended' });
    const first = rule({ priority: 2, match: { query_contains: ['integrate'] }, action: { endpoint_id: C } });
    const later = rule({ priority: 1, match: { query_contains: ['integrate'] }, action: { endpoint_id: B } });
    const d = decideRoute(input({ endpoints: [alpha, beta, paused], settings: settings({ rules: [first, later] }) }), SEMANTIC_WINS_A);
    expect(d).toMatchObject({ endpointId: A, reason: 'matched', ruleId: null });
  });

  it('answers 404 rule_endpoint_not_found when the target is not routable and fallback_to_classification is false', () => {
    const gone = rule({ match: { query_contains: ['integrate'] }, action: { endpoint_id: 'dddddddd-0000-4000-8000-000000000004', fallback_to_classification: false } });
    const err = refusal(() => decideRoute(input({ settings: settings({ rules: [gone] }) }), SEMANTIC_WINS_A));
    expect(err).toMatchObject({ code: 'rule_endpoint_not_found', status: 404 });
  });

  it('treats a target that fails the eligibility filters as not routable', () => {
    const noTools = endpoint(C, 'gamma', { capabilities: [] });
    const strict = rule({ match: { query_contains: ['integrate'] }, action: { endpoint_id: C, fallback_to_classification: false } });
    const q = query({ needs: { tools: true, toolsDeclared: true } });
    expect(refusal(() => decideRoute(input({ query: q, endpoints: [alpha, beta, noTools], settings: settings({ rules: [strict] }) }), SEMANTIC_WINS_A)).code).toBe('rule_endpoint_not_found');
  });

  it('bypasses engagement: a rule serves even with no embedding endpoint', () => {
    const d = decideRoute(input({ hasEmbeddingEndpoint: false, settings: settings({ rules: [rule({ match: { min_input_tokens: 1 }, action: { endpoint_id: B } })] }) }), null);
    expect(d).toMatchObject({ endpointId: B, reason: 'rule' });
  });
});

describe('engagement', () => {
  it('answers 404 no_routable_endpoints when no active generative endpoint serves the workspace', () => {
    const none = [endpoint(A, 'alpha', { status: 'suspended' }), endpoint(B, 'beta', { kind: 'embedding' })];
    expect(refusal(() => decideRoute(input({ endpoints: none }), null))).toMatchObject({ code: 'no_routable_endpoints', status: 404 });
    expect(refusal(() => decideRoute(input({ endpoints: [] }), null)).code).toBe('no_routable_endpoints');
  });

  it('answers 404 no_routable_endpoints when every endpoint is excluded', () => {
    expect(refusal(() => decideRoute(input({ settings: settings({ excludedEndpointIds: [A, B, C] }) }), null)).code).toBe('no_routable_endpoints');
  });

  it('goes straight to the only endpoint, with no similarity and no filters', () => {
    const d = decideRoute(input({ endpoints: [alpha, endpoint(B, 'beta', { status: 'suspended' })], query: query({ needs: { vision: true } }) }), null);
    expect(d).toMatchObject({ endpointId: A, reason: 'single_endpoint', scored: false, candidates: [] });
    expect(planRoute(input({ endpoints: [alpha] })).kind).toBe('decided');
  });

  it('fails open to the default when two or more endpoints have no embedding endpoint to compare them', () => {
    const d = decideRoute(input({ hasEmbeddingEndpoint: false }), null);
    expect(d).toMatchObject({ endpointId: A, reason: 'fallback', wasFallback: true, fallbackReason: 'no_embedding_endpoint', scored: false, classified: true });
    // The candidates the default was picked among, unscored, the winner first.
    expect(d.candidates.map((c) => [c.slug, c.similarity, c.dropped_by])).toEqual([['alpha', null, null], ['beta', null, 'fallback'], ['gamma', null, 'fallback']]);
  });

  it('asks for similarity only when there is something to classify', () => {
    const plan = planRoute(input());
    expect(plan.kind).toBe('classify');
    if (plan.kind === 'classify') expect(plan.eligible.map((e) => e.slug)).toEqual(['alpha', 'beta', 'gamma']);
  });
});

describe('eligibility filters', () => {
  const vision = endpoint(C, 'gamma', { capabilities: ['vision', 'tools', 'structured_output'] });

  it('keeps only endpoints that accept the request modality, and counts the rest', () => {
    const d = decideRoute(input({ endpoints: [alpha, beta, vision], query: query({ needs: { vision: true } }) }), null);
    expect(d).toMatchObject({ endpointId: C, reason: 'single_endpoint', filteredOut: { modality: 2, context_window: 0, tool_calling: 0, structured_output: 0, excluded: 0 } });
    expect(d.candidates.slice(1)).toEqual([
      { endpoint_id: A, slug: 'alpha', similarity: null, dropped_by: 'modality' },
      { endpoint_id: B, slug: 'beta', similarity: null, dropped_by: 'modality' },
    ]);
  });

  it('refuses a modality no endpoint serves with 400', () => {
    expect(refusal(() => decideRoute(input({ query: query({ needs: { audioInput: true } }) }), null))).toMatchObject({ code: 'invalid_request', status: 400, param: 'messages' });
    const videoModel = endpoint(C, 'gamma', { capabilities: ['video_input'] });
    expect(refusal(() => decideRoute(input({ endpoints: [alpha, beta, videoModel], query: query({ needs: { videoInput: true } }) }), null)).code).toBe('invalid_request');
    expect(decideRoute(input({ endpoints: [alpha, beta, videoModel], videoInputEnabled: true, query: query({ needs: { videoInput: true } }) }), null).endpointId).toBe(C);
  });

  it('removes windows too small for the estimated input plus max_tokens', () => {
    const big = endpoint(C, 'gamma', { window: 32768 });
    const d = decideRoute(input({ endpoints: [alpha, beta, big], query: query({ inputTokens: 5000, maxOutputTokens: 4000 }) }), null);
    expect(d).toMatchObject({ endpointId: C, filteredOut: { context_window: 2 } });
  });

  it('reserves 2048 output tokens when the caller sends no max_tokens', () => {
    const fits = query({ inputTokens: 8192 - 2048, maxOutputTokens: null });
    expect(planRoute(input({ query: fits })).kind).toBe('classify');
    const over = query({ inputTokens: 8192 - 2047, maxOutputTokens: null });
    expect(refusal(() => decideRoute(input({ query: over }), null))).toMatchObject({ code: 'context_length_exceeded', param: 'messages' });
  });

  it('answers 400 context_length_exceeded with param max_tokens when every window is too small', () => {
    const err = refusal(() => decideRoute(input({ query: query({ inputTokens: 100, maxOutputTokens: 9000 }) }), null));
    expect(err).toMatchObject({ code: 'context_length_exceeded', status: 400, param: 'max_tokens' });
  });

  it('keeps windows under 4096 tokens routable whatever the size of the request', () => {
    const tiny = endpoint(C, 'gamma', { window: 2048 });
    const d = decideRoute(input({ endpoints: [alpha, beta, tiny], query: query({ inputTokens: 100, maxOutputTokens: 9000 }) }), null);
    expect(d).toMatchObject({ endpointId: C, filteredOut: { context_window: 2 } });
  });

  it('keeps only tool-calling endpoints for declared tools or tool-call history', () => {
    const noTools = endpoint(A, 'alpha', { capabilities: [] });
    const declared = decideRoute(input({ endpoints: [noTools, beta, gamma], query: query({ needs: { tools: true, toolsDeclared: true } }) }), scores({ [B]: 0.9 }));
    expect(declared).toMatchObject({ endpointId: B, filteredOut: { tool_calling: 1 } });
    const none = [noTools, endpoint(B, 'beta', { capabilities: [] })];
    expect(refusal(() => decideRoute(input({ endpoints: none, query: query({ needs: { tools: true, toolsDeclared: true } }) }), null))).toMatchObject({ code: 'unsupported_parameter', param: 'tools' });
    expect(refusal(() => decideRoute(input({ endpoints: none, query: query({ needs: { tools: true, toolsDeclared: false } }) }), null))).toMatchObject({ code: 'unsupported_parameter', param: 'messages' });
  });

  it('keeps only tool-calling endpoints for x_exec, and refuses with model_capability_missing (param x_exec) when none is left', () => {
    const noTools = endpoint(A, 'alpha', { capabilities: [] });
    const exec = { tools: true, toolsDeclared: false, execTools: true };
    expect(decideRoute(input({ endpoints: [noTools, beta], query: query({ needs: exec }) }), scores({ [A]: 0.9, [B]: 0.1 }))).toMatchObject({ endpointId: B, filteredOut: { tool_calling: 1 } });
    const none = [noTools, endpoint(B, 'beta', { capabilities: [] })];
    expect(refusal(() => decideRoute(input({ endpoints: none, query: query({ needs: exec }) }), null))).toMatchObject({ code: 'model_capability_missing', param: 'x_exec' });
  });

  it('keeps only structured-output endpoints for json response formats', () => {
    const plain = [endpoint(A, 'alpha', { capabilities: ['tools'] }), endpoint(B, 'beta', { capabilities: [] })];
    expect(refusal(() => decideRoute(input({ endpoints: plain, query: query({ needs: { structuredOutput: true } }) }), null))).toMatchObject({ code: 'unsupported_parameter', param: 'response_format' });
  });

  it('applies the filters in SPEC order: modality refuses before the context window is looked at', () => {
    const err = refusal(() => decideRoute(input({ query: query({ inputTokens: 99_999, needs: { vision: true } }) }), null));
    expect(err.code).toBe('invalid_request');
  });
});

describe('similarity, floor, proximity bonus and fallback', () => {
  it('serves the best raw score above the floor and lists candidates winner first', () => {
    const d = decideRoute(input(), SEMANTIC_WINS_A);
    expect(d).toMatchObject({ endpointId: A, reason: 'matched', similarity: 0.8, scored: true, classified: true, wasFallback: false });
    expect(d.candidates).toEqual([
      { endpoint_id: A, slug: 'alpha', similarity: 0.8, dropped_by: null },
      { endpoint_id: B, slug: 'beta', similarity: 0.4, dropped_by: 'outranked' },
      { endpoint_id: C, slug: 'gamma', similarity: 0.2, dropped_by: 'below_floor' },
    ]);
  });

  it('applies the floor to the raw score: the proximity bonus never lifts a score over it', () => {
    const d = decideRoute(input({ settings: settings({ similarityFloor: 0.5, proximityBonus: 0.2 }) }), scores({ [A]: 0.45, [B]: 0.1 }));
    expect(d).toMatchObject({ reason: 'fallback', fallbackReason: 'below_floor', similarity: 0.45, endpointId: A });
  });

  it('ranks with the bonus for endpoints in the router region (exact, case-sensitive)', () => {
    const far = endpoint(A, 'alpha', { region: 'far' });
    const near = endpoint(B, 'beta', { region: 'local' });
    const almostLocal = endpoint(B, 'beta', { region: 'Local' });
    expect(decideRoute(input({ endpoints: [far, near] }), scores({ [A]: 0.61, [B]: 0.6 })).endpointId).toBe(B);
    expect(decideRoute(input({ endpoints: [far, almostLocal] }), scores({ [A]: 0.61, [B]: 0.6 })).endpointId).toBe(A);
    expect(decideRoute(input({ endpoints: [far, near], settings: settings({ proximityBonus: 0 }) }), scores({ [A]: 0.61, [B]: 0.6 })).endpointId).toBe(A);
  });

  it('falls back to the configured endpoint when nothing clears the floor', () => {
    const d = decideRoute(input({ settings: settings({ fallbackEndpointId: C }) }), scores({ [A]: 0.1, [B]: 0.2 }));
    expect(d).toMatchObject({ endpointId: C, reason: 'fallback', wasFallback: true, fallbackReason: 'below_floor' });
    expect(d.candidates[0]).toMatchObject({ slug: 'gamma', dropped_by: null });
  });

  it('falls back to the lowest slug when no fallback is set or it is not eligible', () => {
    expect(decideRoute(input({ endpoints: [gamma, beta, alpha] }), scores({})).endpointId).toBe(A);
    const visionOnly = endpoint(C, 'gamma', { capabilities: ['vision'] });
    const q = query({ needs: { tools: true, toolsDeclared: true } });
    expect(decideRoute(input({ query: q, endpoints: [alpha, beta, visionOnly], settings: settings({ fallbackEndpointId: C }) }), scores({})).endpointId).toBe(A);
  });

  it('fails open when similarity could not be computed', () => {
    expect(decideRoute(input(), null)).toMatchObject({ reason: 'fallback', fallbackReason: 'similarity_unavailable', scored: false, endpointId: A });
  });

  it('leaves excluded endpoints out of the ranking, counts them, and lists them last as dropped_by excluded', () => {
    const d = decideRoute(input({ settings: settings({ excludedEndpointIds: [A] }) }), SEMANTIC_WINS_A);
    expect(d).toMatchObject({ endpointId: B, filteredOut: { excluded: 1 } });
    expect(d.candidates.at(-1)).toEqual({ endpoint_id: A, slug: 'alpha', similarity: null, dropped_by: 'excluded' });
    expect(d.candidates.filter((c) => c.endpoint_id === A)).toHaveLength(1);
  });
});

describe('stickiness', () => {
  const sticky = (incumbentId: string | null, s: Map<string, number>, extra = {}) => decideRoute(input({ incumbentId, ...extra }), s);

  it('keeps a conversation on its endpoint while no challenger beats it by the switch margin', () => {
    const d = sticky(B, scores({ [A]: 0.75, [B]: 0.7 }));
    expect(d).toMatchObject({ endpointId: B, reason: 'sticky', wasSticky: true, similarity: 0.7, classified: true });
    expect(d.candidates[1]).toMatchObject({ slug: 'alpha', dropped_by: 'switch_margin' });
  });

  it('moves the conversation when a challenger beats the incumbent by more than the margin', () => {
    const d = sticky(B, scores({ [A]: 0.85, [B]: 0.7 }));
    expect(d).toMatchObject({ endpointId: A, reason: 'matched', wasSticky: false, evictedIncumbentId: B });
  });

  it('gives the incumbent the same proximity bonus a challenger gets', () => {
    const far = endpoint(A, 'alpha', { region: 'far' });
    // Raw gap 0.11 > margin 0.1, but the local incumbent's bonus (0.02) closes it.
    expect(sticky(B, scores({ [A]: 0.81, [B]: 0.7 }), { endpoints: [far, beta, gamma] }).reason).toBe('sticky');
    expect(sticky(B, scores({ [A]: 0.81, [B]: 0.7 })).reason).toBe('matched');
  });

  it('stays put when nothing clears the floor, rather than falling back', () => {
    expect(sticky(B, scores({ [A]: 0.2, [B]: 0.1 }))).toMatchObject({ endpointId: B, reason: 'sticky' });
  });

  it('evicts an incumbent that can no longer serve the conversation and classifies afresh', () => {
    const d = sticky(C, SEMANTIC_WINS_A, { endpoints: [alpha, beta, endpoint(C, 'gamma', { status: 'suspended' })] });
    expect(d).toMatchObject({ endpointId: A, reason: 'matched', evictedIncumbentId: C });
  });

  it('keeps the incumbent when similarity is unavailable', () => {
    expect(sticky(B, null as unknown as Map<string, number>)).toMatchObject({ endpointId: B, reason: 'sticky', scored: false });
  });
});

describe('one eligible endpoint after the filters', () => {
  it('is served straight, with or without an embedding endpoint', () => {
    const vision = endpoint(C, 'gamma', { capabilities: ['vision'] });
    const q = query({ needs: { vision: true } });
    for (const hasEmbeddingEndpoint of [true, false]) {
      expect(decideRoute(input({ endpoints: [alpha, beta, vision], query: q, hasEmbeddingEndpoint }), null)).toMatchObject({ endpointId: C, reason: 'single_endpoint', scored: false });
    }
  });

  it('evicts an incumbent the filters removed', () => {
    const vision = endpoint(C, 'gamma', { capabilities: ['vision'] });
    const d = decideRoute(input({ endpoints: [alpha, beta, vision], query: query({ needs: { vision: true } }), incumbentId: A }), null);
    expect(d).toMatchObject({ endpointId: C, evictedIncumbentId: A });
  });
});
