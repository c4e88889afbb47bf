import { describe, expect, it } from 'vitest';
import { call, expectError, type JsonResponse } from '../helpers/http.js';
import { R_MATH, R_PAUSED, useRouterSuite, WS_CONCRETE, WS_EMPTY, WS_SOLO } from '../helpers/router-config.js';
import { simRequests, simSeq } from '../helpers/simulator-log.js';
import { chunksOf, parseSse } from '../helpers/sse.js';

const suite = useRouterSuite();

const MATH_Q = 'compute the derivative of sin x';
const RECIPE_Q = 'recommend a recipe for dinner tonight';

const routerUrl = (workspace?: string): string => `${suite.base}${workspace ? `/${workspace}` : ''}/_semantic/router/v1/chat/completions`;
const ask = (content: string, extra: Record<string, unknown> = {}) => ({ model: 'client-model', messages: [{ role: 'user', content }], ...extra });
const routed = (body: object, headers: Record<string, string> = {}, workspace?: string): Promise<JsonResponse> =>
  call(routerUrl(workspace), { key: suite.keys.full, body, headers });
const routedTo = (res: JsonResponse): string | null => res.headers.get('x-service-routed-endpoint');

interface Decision {
  readonly decision_request_id: string;
  readonly route_reason: string;
  readonly [field: string]: unknown;
}

async function decisionFor(res: JsonResponse): Promise<Decision> {
  const list = await call(`${suite.base}/v1/management/semantic-router/decisions?limit=200`, { key: suite.keys.full });
  const found = (list.body as { data: Decision[] }).data.find((d) => d.decision_request_id === res.headers.get('x-request-id'));
  if (!found) throw new Error(`no decision row for ${res.headers.get('x-request-id')}`);
  return found;
}

describe('routed chat completions', () => {
  it('routes by meaning and names the endpoint and model in the response headers', async () => {
    const math = await routed(ask(MATH_Q));
    expect(math.status).toBe(200);
    expect(routedTo(math)).toBe('math');
    expect(math.headers.get('x-service-routed-model')).toBe('model-math');
    expect(math.body).toMatchObject({ id: math.headers.get('x-request-id'), object: 'chat.completion', model: 'client-model', service_tier: 'default' });

    const recipe = await routed(ask(RECIPE_Q));
    expect(routedTo(recipe)).toBe('chat');
    expect(recipe.headers.get('x-service-routed-model')).toBe('model-chat');
  });

  it('embeds the query with one upstream call and forwards the body with only model replaced', async () => {
    const before = await simSeq(suite.sim.url);
    const body = ask(MATH_Q, { temperature: 1.0, extra_field: { kept: true } });
    await routed(body);
    const seen = (await simRequests(suite.sim.url, 20)).filter((r) => r.seq > before);
    expect(seen.map((r) => r.path).sort()).toEqual(['/v1/chat/completions', '/v1/embeddings']);
    const chat = seen.find((r) => r.path === '/v1/chat/completions');
    expect(JSON.parse(chat?.body ?? '{}')).toEqual({ ...body, model: 'sim-chat' });
    const embedding = JSON.parse(seen.find((r) => r.path === '/v1/embeddings')?.body ?? '{}') as { input: string[] };
    expect(embedding.input).toEqual([MATH_Q]);
  });

  it('commits the routed headers with the head of a stream, before the first SSE byte', async () => {
    const res = await fetch(routerUrl(), {
      method: 'POST',
      headers: { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json', 'x-sim-first-token-delay-ms': '300' },
      body: JSON.stringify(ask(RECIPE_Q, { stream: true })),
    });
    // fetch resolves on the head: the headers are there before any chunk was read.
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('x-service-routed-endpoint')).toBe('chat');
    expect(res.headers.get('x-service-routed-model')).toBe('model-chat');
    const frames = parseSse(await res.text());
    expect(frames.at(-1)?.data).toBe('[DONE]');
    expect(chunksOf(frames)[0]).toMatchObject({ object: 'chat.completion.chunk', model: 'client-model' });
  });

  it('validates the body exactly like the direct route, before routing', async () => {
    expectError(await routed(ask(MATH_Q, { temperature: 5 })), 400, 'invalid_request', 'temperature');
    expectError(await routed(ask(MATH_Q, { functions: [{ name: 'f' }] })), 400, 'unsupported_parameter', 'functions');
  });

  it('keeps an inference scope requirement and resolves the workspace like other keyed routes', async () => {
    expectError(await call(routerUrl(), { key: suite.keys.managementOnly, body: ask(MATH_Q) }), 403, 'scope_insufficient');
    expectError(await routed(ask(MATH_Q), {}, 'ws_ffffff'), 404, 'workspace_not_found', 'workspace_id');
    expectError(await routed(ask(MATH_Q), { 'x-workspace-id': 'nope' }), 400, 'invalid_workspace_id', 'X-Workspace-Id');
  });
});

describe('workspaces and engagement', () => {
  it('goes straight to the only endpoint of a workspace named in the path', async () => {
    const res = await routed(ask(RECIPE_Q), {}, WS_SOLO);
    expect(res.status).toBe(200);
    expect(routedTo(res)).toBe('solo');
    const row = await decisionFor(res);
    expect(row).toMatchObject({ route_reason: 'single_endpoint', workspace_id: WS_SOLO, candidates: [] });
    expect(row).not.toHaveProperty('similarity_score');
  });

  it('answers 404 no_routable_endpoints for a workspace without generative endpoints', async () => {
    expectError(await routed(ask(MATH_Q), {}, WS_EMPTY), 404, 'no_routable_endpoints');
  });

  it('routes concretely in a workspace whose mode is concrete: the default endpoint, no similarity', async () => {
    const res = await routed(ask(MATH_Q), { 'x-workspace-id': WS_CONCRETE });
    expect(routedTo(res)).toBe('chat');
    expect(await decisionFor(res)).toMatchObject({ route_reason: 'concrete', was_fallback: false });
  });
});

describe('eligibility filters', () => {
  it('sends an image to the only vision endpoint and counts what the filter removed', async () => {
    const image = { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } };
    const res = await routed({ model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: MATH_Q }, image] }] });
    expect(routedTo(res)).toBe('vision');
    expect(await decisionFor(res)).toMatchObject({ route_reason: 'single_endpoint', filtered_out: { modality: 2, context_window: 0, tool_calling: 0, structured_output: 0 } });
  });

  it('keeps only structured-output endpoints for a json_schema request, however mathematical', async () => {
    const res = await routed(ask(MATH_Q, { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } } }));
    expect(routedTo(res)).toBe('chat');
  });

  it('keeps only windows large enough for the request', async () => {
    const res = await routed(ask(MATH_Q, { max_tokens: 20_000 }));
    expect(routedTo(res)).toBe('chat');
    expect((await decisionFor(res)).filtered_out).toMatchObject({ context_window: 2 });
  });

  it('answers 400 context_length_exceeded when no window fits', async () => {
    expectError(await routed(ask(MATH_Q, { max_tokens: 100_000 })), 400, 'context_length_exceeded', 'max_tokens');
  });

  it('answers 400 unsupported_parameter when tools meet no tool-calling endpoint', async () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
    const image = { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } };
    const res = await routed({ model: 'm', tools, messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, image] }] });
    expectError(res, 400, 'unsupported_parameter', 'tools');
  });
});

describe('stickiness', () => {
  it('moves a conversation only when a challenger beats its endpoint by the switch margin', async () => {
    const headers = { 'x-conversation-id': 'conv-moves' };
    expect(routedTo(await routed(ask(MATH_Q), headers))).toBe('math');
    // The recipe question scores far higher on chat than on math: well past the 0.1 margin.
    const moved = await routed(ask(RECIPE_Q), headers);
    expect(routedTo(moved)).toBe('chat');
    expect(await decisionFor(moved)).toMatchObject({ route_reason: 'matched', evicted_incumbent_id: R_MATH, was_sticky: false });
  });

  it('keeps a conversation where it is while no challenger clears the margin', async () => {
    const patch = await call(`${suite.base}/v1/management/semantic-router/config`, { method: 'PATCH', key: suite.keys.full, body: { semantic_router_switch_margin: 1 } });
    expect(patch.status).toBe(200);
    try {
      const headers = { 'x-conversation-id': 'conv-stays' };
      expect(routedTo(await routed(ask(MATH_Q), headers))).toBe('math');
      const stays = await routed(ask(RECIPE_Q), headers);
      expect(routedTo(stays)).toBe('math');
      expect(await decisionFor(stays)).toMatchObject({ route_reason: 'sticky', was_sticky: true, evicted_incumbent_id: null });
      // Another conversation with the same question is classified on its own.
      expect(routedTo(await routed(ask(RECIPE_Q), { 'x-conversation-id': 'conv-other' }))).toBe('chat');
    } finally {
      await call(`${suite.base}/v1/management/semantic-router/config`, { method: 'PATCH', key: suite.keys.full, body: { semantic_router_switch_margin: null } });
    }
  });

  it('derives the affinity key from the thread when no X-Conversation-Id is sent', async () => {
    const turn2 = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: MATH_Q },
      { role: 'assistant', content: 'cos x' },
      { role: 'user', content: 'and the integral of x squared?' },
    ];
    const first = await routed({ model: 'm', messages: turn2 });
    expect(await decisionFor(first)).toMatchObject({ route_reason: 'matched', endpoint_slug: 'math' });
    const turn3 = [...turn2, { role: 'assistant', content: 'x^3 / 3' }, { role: 'user', content: 'thanks!' }];
    const second = await routed({ model: 'm', messages: turn3 });
    expect(await decisionFor(second)).toMatchObject({ route_reason: 'sticky', endpoint_slug: 'math' });
  });
});

describe('operator rules', () => {
  const rulesUrl = (): string => `${suite.base}/v1/management/semantic-router/rules`;

  it('serves a matching rule before classification and records it', async () => {
    const created = await call(rulesUrl(), { key: suite.keys.full, body: { name: 'lisbon to math', query_contains: ['LISBON'], endpoint_id: R_MATH } });
    expect(created.status).toBe(201);
    const ruleId = (created.body as { id: string }).id;
    try {
      const res = await routed(ask('plan a weekend trip to Lisbon'));
      expect(routedTo(res)).toBe('math');
      expect(await decisionFor(res)).toMatchObject({ route_reason: 'rule', rule_id: ruleId, matched_keywords: ['LISBON'], candidates: [] });
    } finally {
      await call(`${rulesUrl()}/${ruleId}`, { method: 'DELETE', key: suite.keys.full });
    }
  });

  it('answers 404 rule_endpoint_not_found when the target is suspended and the rule does not fall back', async () => {
    const strict = await call(rulesUrl(), { key: suite.keys.full, body: { query_contains: ['sonnet'], endpoint_id: R_PAUSED, fallback_to_classification: false, priority: 2 } });
    const lenient = await call(rulesUrl(), { key: suite.keys.full, body: { query_contains: ['haiku'], endpoint_id: R_PAUSED } });
    try {
      expectError(await routed(ask('write a sonnet about dinner recipes')), 404, 'rule_endpoint_not_found');
      const fellThrough = await routed(ask(`a haiku: ${RECIPE_Q}`));
      expect(routedTo(fellThrough)).toBe('chat');
      expect((await decisionFor(fellThrough)).route_reason).toBe('matched');
    } finally {
      for (const r of [strict, lenient]) await call(`${rulesUrl()}/${(r.body as { id: string }).id}`, { method: 'DELETE', key: suite.keys.full });
    }
  });
});

describe('decision rows', () => {
  it('record every SPEC field, the prompt excerpt, and nothing of the API key', async () => {
    const res = await routed(ask(MATH_Q), { 'user-agent': 'router-test/1.0' });
    const row = await decisionFor(res);
    expect(row).toMatchObject({
      decision_request_id: res.headers.get('x-request-id'),
      query_preview: MATH_Q,
      endpoint_slug: 'math',
      endpoint_name: 'Router math',
      matched_keywords: [],
      was_sticky: false,
      was_fallback: false,
      rule_id: null,
      route_reason: 'matched',
      evicted_incumbent_id: null,
      fallback_reason: null,
      filtered_out: { modality: 0, context_window: 0, tool_calling: 0, structured_output: 0, excluded: 0 },
      router_id: 'rtr_local',
      client_mode: 'api',
      user_agent: 'router-test/1.0',
      client_ip: '127.0.0.1',
    });
    expect(typeof row.similarity_score).toBe('number');
    expect(typeof row.route_time_ms).toBe('number');
    expect(Date.parse(String(row.timestamp))).not.toBeNaN();
    const candidates = row.candidates as { slug: string; similarity: number; dropped_by: string | null }[];
    expect(candidates[0]).toMatchObject({ slug: 'math', dropped_by: null });
    expect(candidates.map((c) => c.slug).sort()).toEqual(['chat', 'math', 'vision']);
    const text = JSON.stringify(row);
    expect(text).not.toContain(suite.keys.full);
    expect(text).not.toContain(suite.keys.full.slice(-20));
  });

  it('falls back when nothing clears the similarity floor', async () => {
    const res = await routed(ask('zebra xylophone quokka'));
    expect(await decisionFor(res)).toMatchObject({ route_reason: 'fallback', was_fallback: true, fallback_reason: 'below_floor', endpoint_slug: 'chat' });
  });

  it('are written for routed requests only, never for direct ones', async () => {
    const direct = await call(`${suite.base}/math/v1/chat/completions`, { key: suite.keys.full, body: ask(MATH_Q), headers: { 'x-conversation-id': 'ignored' } });
    expect(direct.status).toBe(200);
    expect(direct.headers.get('x-service-routed-endpoint')).toBeNull();
    await expect(decisionFor(direct)).rejects.toThrow(/no decision row/);
  });
});
