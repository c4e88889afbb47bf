import Database from 'better-sqlite3';
import { beforeEach, describe, expect, it } from 'vitest';
import { OTHER_PROJECT } from '../helpers/configs.js';
import { advanceClock, call, errorOf, expectError, type JsonResponse } from '../helpers/http.js';
import { R_CHAT, R_EMBED, R_MATH, R_PAUSED, R_VISION, useRouterSuite } from '../helpers/router-config.js';

const suite = useRouterSuite();

const mgmt = (path: string): string => `${suite.base}/v1/management/semantic-router${path}`;
const get = (path: string, key = suite.keys.full): Promise<JsonResponse> => call(mgmt(path), { key });
const patchConfig = (body: unknown): Promise<JsonResponse> => call(mgmt('/config'), { method: 'PATCH', key: suite.keys.full, body: body as object });
const createRule = (body: object): Promise<JsonResponse> => call(mgmt('/rules'), { key: suite.keys.full, body });
const routed = (content: string): Promise<JsonResponse> =>
  call(`${suite.base}/_semantic/router/v1/chat/completions`, { key: suite.keys.full, body: { model: 'm', messages: [{ role: 'user', content }] } });
const idOf = (res: JsonResponse): string => (res.body as { id: string }).id;

// The management limit is 60 requests a minute per project: each test starts a fresh window.
beforeEach(async () => {
  await advanceClock(suite.gw.url, 61_000);
});

describe('authorization', () => {
  it('needs the management scope and a key of the same project', async () => {
    expectError(await get('/config', suite.keys.inferenceOnly), 403, 'scope_insufficient');
    expect((await get('/health', suite.keys.managementOnly)).status).toBe(200);
    expectError(await call(`${suite.gw.url}/${OTHER_PROJECT}/v1/management/semantic-router/config`, { key: suite.keys.full }), 403, 'project_mismatch');
  });

  it('caps bodies at 16 KiB', async () => {
    const res = await call(mgmt('/config'), { method: 'PATCH', key: suite.keys.full, body: { semantic_router_dynamic_rules: [{ name: 'x'.repeat(17 * 1024) }] } });
    expectError(res, 413, 'payload_too_large');
  });
});

describe('config', () => {
  it('returns the effective configuration with every block SPEC lists', async () => {
    const res = await get('/config');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      preferences: {
        semantic_router_enabled: true,
        semantic_router_multi_model_enabled: true,
        semantic_router_similarity_floor: 0.3,
        semantic_router_switch_margin: 0.1,
        semantic_router_proximity_bonus: 0.02,
        semantic_router_fallback_endpoint_id: null,
        semantic_router_excluded_endpoint_ids: [],
        semantic_router_dynamic_rules: [],
      },
      embedding_endpoint: { present: true, id: R_EMBED },
      availability: { state: 'available', semantic_routing_engaged: true },
      deployment_defaults: { semantic_router_similarity_floor: 0.3, semantic_router_proximity_bonus: 0.02 },
      usage_7d: { window_days: 7 },
      routing_health: { window_hours: 24 },
      unavailable_endpoints: [],
    });
    const routable = (res.body as { routable_endpoints: { slug: string }[] }).routable_endpoints.map((e) => e.slug).sort();
    expect(routable).toEqual(['chat', 'math', 'solo', 'vision']);
  });

  it('changes the keys sent, leaves the others, and resets a key sent as null', async () => {
    const set = await patchConfig({ semantic_router_similarity_floor: 0.5, semantic_router_fallback_endpoint_id: R_MATH });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ semantic_router_similarity_floor: 0.5, semantic_router_fallback_endpoint_id: R_MATH, semantic_router_switch_margin: 0.1 });
    const other = await patchConfig({ semantic_router_proximity_bonus: 0 });
    expect(other.body).toMatchObject({ semantic_router_similarity_floor: 0.5, semantic_router_proximity_bonus: 0 });
    const reset = await patchConfig({ semantic_router_similarity_floor: null, semantic_router_fallback_endpoint_id: null, semantic_router_proximity_bonus: null });
    expect(reset.body).toMatchObject({ semantic_router_similarity_floor: 0.3, semantic_router_fallback_endpoint_id: null, semantic_router_proximity_bonus: 0.02 });
    expect((await get('/config')).body).toMatchObject({ preferences: { semantic_router_similarity_floor: 0.3 } });
  });

  it('refuses unknown keys, out-of-range numbers and wrong types instead of clamping them', async () => {
    expectError(await patchConfig({ semantic_router_threshold: 0.4 }), 400, 'unknown_semantic_router_setting', 'semantic_router_threshold');
    expectError(await patchConfig({ semantic_router_similarity_floor: 1.01 }), 400, 'invalid_semantic_router_config', 'semantic_router_similarity_floor');
    expectError(await patchConfig({ semantic_router_switch_margin: -0.5 }), 400, 'invalid_semantic_router_config', 'semantic_router_switch_margin');
    expectError(await patchConfig({ semantic_router_enabled: 'false' }), 400, 'invalid_semantic_router_config', 'semantic_router_enabled');
    const embedFallback = await patchConfig({ semantic_router_fallback_endpoint_id: R_EMBED });
    expectError(embedFallback, 400, 'invalid_semantic_router_config', 'semantic_router_fallback_endpoint_id');
    // The fallback is not a rule: the message used to say "rules route to generative (chat) endpoints".
    expect(errorOf(embedFallback).message).toMatch(/^semantic_router_fallback_endpoint_id names \S+, an embedding endpoint; it must name a generative \(chat\) endpoint\.$/);
    expectError(
      await patchConfig({ semantic_router_excluded_endpoint_ids: [R_VISION, 'ffffffff-0000-4000-8000-00000000000f'] }),
      400,
      'invalid_semantic_router_config',
      'semantic_router_excluded_endpoint_ids[1]',
    );
    expectError(await patchConfig([1]), 400, 'invalid_semantic_router_config');
    expect((await get('/config')).body).toMatchObject({ preferences: { semantic_router_similarity_floor: 0.3, semantic_router_enabled: true } });
  });

  it('replaces the rule array whole, and routing follows a disabled switch at once', async () => {
    const set = await patchConfig({
      semantic_router_enabled: false,
      semantic_router_dynamic_rules: [{ name: 'nested', match: { query_contains: ['zzz'] }, action: { endpoint_id: R_VISION } }],
    });
    expect(set.status).toBe(200);
    const rules = (set.body as { semantic_router_dynamic_rules: { id: string; action: object }[] }).semantic_router_dynamic_rules;
    expect(rules).toHaveLength(1);
    expect(rules[0]).toMatchObject({ id: expect.stringMatching(/^rule_[0-9a-f]{24}$/), action: { endpoint_id: R_VISION, fallback_to_classification: true } });
    try {
      const res = await routed('compute the derivative of sin x');
      expect(res.headers.get('x-service-routed-endpoint')).toBe('chat');
      expect((await get('/config')).body).toMatchObject({ availability: { state: 'disabled' } });
    } finally {
      const cleared = await patchConfig({ semantic_router_enabled: null, semantic_router_dynamic_rules: null });
      expect(cleared.body).toMatchObject({ semantic_router_enabled: true, semantic_router_dynamic_rules: [] });
    }
  });

  it('names the item of the rule array that fails, by index', async () => {
    const res = await patchConfig({
      semantic_router_dynamic_rules: [
        { match: { query_contains: ['a'] }, action: { endpoint_id: R_MATH } },
        { match: { query_contains: ['b'] }, action: { endpoint_id: R_EMBED } },
      ],
    });
    expectError(res, 400, 'invalid_semantic_router_config', 'semantic_router_dynamic_rules[1].action.endpoint_id');
    expectError(await patchConfig({ semantic_router_dynamic_rules: [{ id: 'rule_nope', match: { query_contains: ['a'] }, action: { endpoint_id: R_MATH } }] }), 400, 'invalid_semantic_router_config', 'semantic_router_dynamic_rules[0].id');
  });
});

describe('rules', () => {
  it('creates a rule in the nested response shape with SPEC defaults', async () => {
    const res = await createRule({ name: 'long prompts', min_input_tokens: 5000, endpoint_id: R_CHAT });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^rule_/),
      name: 'long prompts',
      match: { query_contains: [], min_input_tokens: 5000, exact_request_model: null },
      action: { endpoint_id: R_CHAT, fallback_to_classification: true },
      priority: 0,
      enabled: true,
    });
    await call(mgmt(`/rules/${idOf(res)}`), { method: 'DELETE', key: suite.keys.full });
  });

  it('lists rules in stored order, updates only the fields sent, and deletes with 204', async () => {
    const low = await createRule({ name: 'low', query_contains: ['a'], endpoint_id: R_MATH, priority: 1 });
    const high = await createRule({ name: 'high', exact_request_model: 'gpt-x', endpoint_id: R_PAUSED, priority: 9 });
    expect((await get('/rules')).body).toEqual({ data: [low.body, high.body] });

    const updated = await call(mgmt(`/rules/${idOf(low)}`), { method: 'PATCH', key: suite.keys.full, body: { enabled: false, query_contains: ['b', 'c'] } });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ id: idOf(low), name: 'low', enabled: false, priority: 1, match: { query_contains: ['b', 'c'] } });
    expectError(await call(mgmt(`/rules/${idOf(high)}`), { method: 'PATCH', key: suite.keys.full, body: { exact_request_model: null } }), 400, 'invalid_semantic_router_config', 'exact_request_model');
    expectError(await call(mgmt(`/rules/${idOf(low)}`), { method: 'PATCH', key: suite.keys.full, body: { query_contains: [] } }), 400, 'invalid_semantic_router_config', 'query_contains');
    expectError(await call(mgmt('/rules/rule_missing'), { method: 'PATCH', key: suite.keys.full, body: { enabled: true } }), 404, 'rule_not_found');

    for (const r of [low, high]) {
      const del = await call(mgmt(`/rules/${idOf(r)}`), { method: 'DELETE', key: suite.keys.full });
      expect(del.status).toBe(204);
      expect(del.body).toBe('');
    }
    expect((await call(mgmt('/rules/rule_missing'), { method: 'DELETE', key: suite.keys.full })).status).toBe(204);
    expect((await get('/rules')).body).toEqual({ data: [] });
  });

  it('validates a rule before writing it', async () => {
    expectError(await createRule({ name: 'matches everything', endpoint_id: R_MATH }), 400, 'invalid_semantic_router_config', 'query_contains');
    expectError(await createRule({ query_contains: ['a'], endpoint_id: R_EMBED }), 400, 'invalid_semantic_router_config', 'endpoint_id');
    expectError(await createRule({ query_contains: ['a'], endpoint_id: 'model-math' }), 400, 'invalid_semantic_router_config', 'endpoint_id');
    expectError(await createRule({ query_contains: ['a'], endpoint_id: R_MATH, id: 'rule_mine' }), 400, 'invalid_semantic_router_config', 'id');
    expectError(await createRule({ query_contains: ['a', 'x'.repeat(201)], endpoint_id: R_MATH }), 400, 'invalid_semantic_router_config', 'query_contains[1]');
    expectError(await createRule({ query_contains: ['a'], endpoint_id: R_MATH, priority: 1.5 }), 400, 'invalid_semantic_router_config', 'priority');
    expect((await get('/rules')).body).toEqual({ data: [] });
  });

  it('names an unknown field in param, on rule bodies and inside the config PATCH rule array', async () => {
    // Regression: a strict body's unknown key answered "The request body is not valid; got an object." with
    // param null (and "... must be a rule object; got an object." inside the rule array): the key was nowhere.
    const unknown = await createRule({ query_contains: ['a'], endpoint_id: R_MATH, match_all: true });
    expectError(unknown, 400, 'invalid_semantic_router_config', 'match_all');
    expect(errorOf(unknown).message).toMatch(/^match_all is not a field of this request; the fields are name, query_contains, /);
    const created = await createRule({ query_contains: ['a'], endpoint_id: R_MATH });
    try {
      expectError(await call(mgmt(`/rules/${idOf(created)}`), { method: 'PATCH', key: suite.keys.full, body: { prio: 2 } }), 400, 'invalid_semantic_router_config', 'prio');
    } finally {
      await call(mgmt(`/rules/${idOf(created)}`), { method: 'DELETE', key: suite.keys.full });
    }
    const nested = await patchConfig({ semantic_router_dynamic_rules: [{ match: { query_contains: ['a'], regex: 'x' }, action: { endpoint_id: R_MATH } }] });
    expectError(nested, 400, 'invalid_semantic_router_config', 'semantic_router_dynamic_rules[0].match.regex');
    expect(errorOf(nested).message).toBe('semantic_router_dynamic_rules[0].match.regex is not a known field.');
    expectError(await patchConfig({ semantic_router_dynamic_rules: [{ action: { endpoint_id: R_MATH }, match: { query_contains: ['a'] }, weight: 1 }] }), 400, 'invalid_semantic_router_config', 'semantic_router_dynamic_rules[0].weight');
    expect((await get('/rules')).body).toEqual({ data: [] });
  });

  it('allows at most 20 rules per project', async () => {
    const rules = Array.from({ length: 20 }, (_, i) => ({ match: { query_contains: [`w${i}`] }, action: { endpoint_id: R_MATH } }));
    expect((await patchConfig({ semantic_router_dynamic_rules: rules })).status).toBe(200);
    try {
      expectError(await createRule({ query_contains: ['one more'], endpoint_id: R_MATH }), 400, 'invalid_semantic_router_config', 'semantic_router_dynamic_rules');
    } finally {
      await patchConfig({ semantic_router_dynamic_rules: null });
    }
  });
});

describe('decisions and health', () => {
  it('lists decisions newest first with limit defaulting to 50 and clamped to 1-200', async () => {
    for (let i = 0; i < 52; i += 1) await routed(i % 2 === 0 ? `compute the derivative of x to the ${i}` : `recipe number ${i} for dinner`);
    const rows = (res: JsonResponse): { decision_request_id: string; timestamp: string }[] => (res.body as { data: { decision_request_id: string; timestamp: string }[] }).data;
    const all = rows(await get('/decisions'));
    expect(all).toHaveLength(50);
    const times = all.map((r) => Date.parse(r.timestamp));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    expect(rows(await get('/decisions?limit=2'))).toEqual(all.slice(0, 2));
    expect(rows(await get('/decisions?limit=0'))).toHaveLength(1);
    expect(rows(await get('/decisions?limit=-4'))).toHaveLength(1);
    expect(rows(await get('/decisions?limit=1000')).length).toBeGreaterThanOrEqual(52);
    expectError(await get('/decisions?limit=ten'), 400, 'invalid_limit', 'limit');
    expectError(await get('/decisions?limit='), 400, 'invalid_limit', 'limit');
  });

  // Number() reads `Infinity`, so docs that refused only what it "cannot read" promised a clamp to 200; SPEC
  // clamps numbers and refuses the rest, and a limit no finite number names is refused, saying why.
  it.each(['Infinity', '-Infinity', '1e400'])('refuses limit=%s with 400 invalid_limit: not a finite number', async (limit) => {
    const res = await get(`/decisions?limit=${encodeURIComponent(limit)}`);
    expectError(res, 400, 'invalid_limit', 'limit');
    expect(errorOf(res).message).toBe(`limit must be a finite number (values outside 1 to 200 are clamped to it); got "${limit}".`);
  });

  it('counts health as SPEC defines it', async () => {
    const res = await get('/health');
    const h = res.body as Record<string, number>;
    expect(h.window_hours).toBe(24);
    expect(h.classified_count).toBe((h.matched_count ?? 0) + (h.sticky_count ?? 0) + (h.fallback_count ?? 0));
    expect(h.decision_count).toBeGreaterThanOrEqual(h.classified_count ?? 0);
    expect(h.matched_count).toBeGreaterThan(0);
    expect(h.fallback_pct).toBeCloseTo(((h.fallback_count ?? 0) / (h.classified_count ?? 1)) * 100, 1);
  });

  it('stores prompt excerpts encrypted, and shows an empty preview for a row it cannot decrypt', async () => {
    const secret = 'compute the derivative of the secret function';
    const res = await routed(secret);
    const id = res.headers.get('x-request-id') ?? '';
    await get('/decisions?limit=1');
    const db = new Database(suite.gw.dbPath);
    try {
      const row = db.prepare<[string], { query_preview: string; detail: string }>('SELECT query_preview, detail FROM routing_decisions WHERE request_id = ?').get(id);
      expect(row?.query_preview).toMatch(/^v1\./);
      expect(row?.query_preview).not.toContain('secret');
      expect(row?.detail).not.toContain('secret');
      db.prepare('UPDATE routing_decisions SET request_id = ? WHERE request_id = ?').run(`${id}-moved`, id);
    } finally {
      db.close();
    }
    const listed = (await get('/decisions?limit=200')).body as { data: { decision_request_id: string; query_preview: string }[] };
    // Sealed with the request id as associated data: the same ciphertext on another row does not open.
    expect(listed.data.find((d) => d.decision_request_id === `${id}-moved`)?.query_preview).toBe('');
  });

  it('keeps a 24-hour window', async () => {
    await advanceClock(suite.gw.url, 24 * 3_600_000 + 1000);
    expect((await get('/decisions')).body).toEqual({ data: [] });
    expect((await get('/health')).body).toMatchObject({ decision_count: 0, classified_count: 0, fallback_pct: 0 });
  });
});
