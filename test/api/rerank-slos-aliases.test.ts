/**
 * Issue 14 through real processes: rerank and score (vLLM shapes) on rerank endpoints, with usage rows;
 * SLOs (create, list, the router preferring the endpoint that meets the objective, attainment on the
 * health route); and the Models API's aliases (create, list, use, patch, delete, and their refusals).
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError, type JsonResponse } from '../helpers/http.js';
import { makeKeys, testConfig } from '../helpers/configs.js';
import { mintTestKey, startGatewayProcess, startSimulatorProcess } from '../helpers/processes.js';
import { makeRouterKeys, R_CHAT, R_MATH, ROUTER_PROJECT, routerProject } from '../helpers/router-config.js';
import { useProcesses } from '../helpers/suite.js';
import { lastSimRequest } from '../helpers/simulator-log.js';
import { openUsageDb, type UsageDb, type UsageEventRow } from '../helpers/usage-db.js';

const RR_PROJECT = 'proj_rerank';
const RR_WS = 'ws_f6f6f6';
const RR_ID = 'b0000000-0000-4000-8000-000000000001';
const TALK_ID = 'b0000000-0000-4000-8000-000000000002';
const rrKey = mintTestKey('rerank');
const mgmtOnlyKey = mintTestKey('rerank');

function rerankProject(upstream: string) {
  return {
    id: RR_PROJECT,
    slug: 'rerank',
    default_workspace: RR_WS,
    workspaces: [{ id: RR_WS, name: 'Main' }],
    endpoints: [
      { id: RR_ID, slug: 'rr', name: 'Reranker', kind: 'rerank', tier: 'cpu', model: { id: 'bge-reranker', context_window: 8192 }, upstream: { base_url: upstream, model: 'sim-rerank' } },
      { id: TALK_ID, slug: 'talk', name: 'Talk', kind: 'chat', tier: 'gpu', model: { id: 'model-talk', context_window: 8192 }, upstream: { base_url: upstream, model: 'sim-chat' } },
    ],
    keys: [
      { value: rrKey, scopes: ['inference'] },
      { value: mgmtOnlyKey, scopes: ['management'] },
    ],
  };
}

/** The router suite's processes, with this file's project added to the config. */
const suite = useProcesses(async () => {
  const keys = makeRouterKeys();
  const sim = await startSimulatorProcess();
  const config = testConfig(sim.url, makeKeys(), { extraProjects: [routerProject(sim.url, keys), rerankProject(sim.url)] });
  const gw = await startGatewayProcess(config);
  return { sim, gw, keys, base: `${gw.url}/${ROUTER_PROJECT}` };
});
let usage: UsageDb;

beforeAll(() => {
  usage = openUsageDb(suite.gw.dbPath);
});
afterAll(() => usage?.close());

const rr = (path: string): string => `${suite.gw.url}/${RR_PROJECT}${path}`;
const post = (url: string, body: object | string, key = rrKey, headers: Record<string, string> = {}): Promise<JsonResponse> => call(url, { key, body, headers });

async function rowOf(res: JsonResponse): Promise<UsageEventRow> {
  const id = res.headers.get('x-request-id') ?? '';
  const until = Date.now() + 3000;
  for (;;) {
    const row = usage.recent(50).find((r) => r.request_id === id);
    if (row) return row;
    if (Date.now() > until) throw new Error(`no usage row for ${id}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface RerankAnswer {
  id: string;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
  results: { index: number; document?: { text: string }; relevance_score: number }[];
}

interface ScoreAnswer {
  object: string;
  model: string;
  data: { index: number; object: string; score: number }[];
  usage: { prompt_tokens: number };
}

describe('rerank and score', () => {
  it('reranks through the direct route with only model replaced, and charges the server-reported tokens', async () => {
    const body = {
      model: 'jina-reranker-v2',
      query: 'the cat sat on the mat',
      documents: ['stock prices fell sharply today', 'a cat sat on a mat', 'the weather is cold'],
      top_n: 2,
      return_documents: true,
      extra_field: { kept: true },
    };
    const res = await post(rr('/rr/v1/rerank'), body);
    expect(res.status).toBe(200);
    const answer = res.body as RerankAnswer;
    expect(answer.model).toBe('jina-reranker-v2');
    expect(answer.results).toHaveLength(2);
    expect(answer.results[0]).toMatchObject({ index: 1, document: { text: 'a cat sat on a mat' } });
    expect(answer.results[0]?.relevance_score).toBeGreaterThan(answer.results[1]?.relevance_score ?? 1);
    const seen = await lastSimRequest(suite.sim.url);
    expect(seen.path).toBe('/v1/rerank');
    expect(JSON.parse(seen.body)).toEqual({ ...body, model: 'sim-rerank' });
    const row = await usage.waitForRow(res.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ route: 'rerank', endpoint_id: RR_ID, project_id: RR_PROJECT, prompt_tokens: answer.usage.prompt_tokens, completion_tokens: 0, status: 'completed', usage_source: 'upstream' });
  });

  it('accepts Cohere-style {text} documents and the project base URL, where model names the endpoint', async () => {
    const res = await post(rr('/v1/rerank'), { model: 'bge-reranker', query: 'dogs', documents: [{ text: 'a dog ran' }, { text: 'bonds' }], return_documents: false });
    expect(res.status).toBe(200);
    const answer = res.body as RerankAnswer;
    expect(answer.results.map((r) => r.index)).toEqual([0, 1]);
    expect(answer.results[0]?.document).toBeUndefined();
    expect((await usage.waitForRow(res.headers.get('x-request-id') ?? '')).endpoint_id).toBe(RR_ID);
  });

  it('scores text_1 against a list of text_2 and records a score usage row', async () => {
    const res = await post(rr('/rr/v1/score'), { model: 'bge', text_1: 'what is the capital of france', text_2: ['paris is the capital of france', 'bananas are yellow'] });
    expect(res.status).toBe(200);
    const answer = res.body as ScoreAnswer;
    expect(answer).toMatchObject({ object: 'list', model: 'bge' });
    expect(answer.data.map((d) => d.index)).toEqual([0, 1]);
    expect(answer.data[0]?.score).toBeGreaterThan(answer.data[1]?.score ?? 1);
    expect((await lastSimRequest(suite.sim.url)).path).toBe('/v1/score');
    const row = await usage.waitForRow(res.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ route: 'score', endpoint_id: RR_ID, prompt_tokens: answer.usage.prompt_tokens, usage_source: 'upstream' });
  });

  it('refuses rerank and score on an endpoint of another kind with 400 invalid_request', async () => {
    expectError(await post(rr('/talk/v1/rerank'), { model: 'm', query: 'q', documents: ['d'] }), 400, 'invalid_request');
    expectError(await post(rr('/talk/v1/score'), { model: 'm', text_1: 'a', text_2: 'b' }), 400, 'invalid_request');
    expectError(await post(rr('/v1/rerank'), { model: 'model-talk', query: 'q', documents: ['d'] }), 400, 'invalid_request', 'model');
  });

  it('validates the body at the edge and admits only inference keys', async () => {
    expectError(await post(rr('/rr/v1/rerank'), { model: 'm', query: 'q' }), 400, 'invalid_request', 'documents');
    expectError(await post(rr('/rr/v1/rerank'), { model: 'm', query: 'q', documents: [3] }), 400, 'invalid_request', 'documents[0]');
    expectError(await post(rr('/rr/v1/score'), { model: 'm', text_1: 'a', text_2: [] }), 400, 'invalid_request', 'text_2');
    expectError(await post(rr('/rr/v1/rerank'), { model: 'm', query: 'q', documents: ['d'] }, mgmtOnlyKey), 403, 'scope_insufficient');
    expectError(await post(rr('/nope/v1/rerank'), { model: 'm', query: 'q', documents: ['d'] }), 404, 'endpoint_not_found');
  });
});

describe('model aliases (the Models API)', () => {
  const sdk = (): OpenAI => new OpenAI({ apiKey: rrKey, baseURL: rr('/v1'), maxRetries: 0 });
  const chat = (model: string): Promise<JsonResponse> => post(rr('/v1/chat/completions'), { model, messages: [{ role: 'user', content: 'hello there' }] });

  it('creates an alias that the listing shows and chat completions resolve', async () => {
    const res = await post(rr('/v1/models'), { id: 'fast', target: 'model-talk' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: 'fast', object: 'model', created: expect.any(Number), owned_by: RR_PROJECT, target: 'model-talk' });
    const listed = await sdk().models.list();
    expect(listed.data.map((m) => m.id)).toEqual(['bge-reranker', 'model-talk', 'fast']);
    expect(await sdk().models.retrieve('fast')).toMatchObject({ id: 'fast', object: 'model', owned_by: RR_PROJECT, target: 'model-talk' });
    const turn = await chat('fast');
    expect(turn.status).toBe(200);
    expect(JSON.parse((await lastSimRequest(suite.sim.url)).body).model).toBe('sim-chat');
    expect((await usage.waitForRow(turn.headers.get('x-request-id') ?? '')).endpoint_id).toBe(TALK_ID);
  });

  it('refuses an alias that would shadow a served model or an existing alias with 409 model_exists', async () => {
    expectError(await post(rr('/v1/models'), { id: 'model-talk', target: 'bge-reranker' }), 409, 'model_exists', 'id');
    expectError(await post(rr('/v1/models'), { id: 'fast', target: 'model-talk' }), 409, 'model_exists', 'id');
  });

  it('refuses a target the project does not serve (an alias included), unknown fields and a management-only key', async () => {
    expectError(await post(rr('/v1/models'), { id: 'other', target: 'gpt-nothing' }), 400, 'invalid_request', 'target');
    expectError(await post(rr('/v1/models'), { id: 'other', target: 'fast' }), 400, 'invalid_request', 'target');
    expectError(await post(rr('/v1/models'), { id: ' padded', target: 'model-talk' }), 400, 'invalid_request', 'id');
    expectError(await post(rr('/v1/models'), { id: 'other', target: 'model-talk', owned_by: 'me' }), 400, 'invalid_request', 'owned_by');
    expectError(await post(rr('/v1/models'), { id: 'other', target: 'model-talk' }, mgmtOnlyKey), 403, 'scope_insufficient');
  });

  it('retargets an alias with PATCH, after which it resolves to the new model on its own routes', async () => {
    const res = await call(rr('/v1/models/fast'), { method: 'PATCH', key: rrKey, body: { target: 'bge-reranker' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: 'fast', target: 'bge-reranker' });
    expectError(await chat('fast'), 400, 'invalid_request', 'model');
    expect((await post(rr('/v1/rerank'), { model: 'fast', query: 'q', documents: ['d'] })).status).toBe(200);
    expectError(await call(rr('/v1/models/nope'), { method: 'PATCH', key: rrKey, body: { target: 'model-talk' } }), 404, 'model_not_found', 'model');
    expectError(await call(rr('/v1/models/model-talk'), { method: 'PATCH', key: rrKey, body: { target: 'bge-reranker' } }), 400, 'invalid_request', 'model');
  });

  it('deletes an alias, after which it is neither listed nor resolved', async () => {
    const res = await call(rr('/v1/models/fast'), { method: 'DELETE', key: rrKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: 'fast', object: 'model', deleted: true });
    expectError(await call(rr('/v1/models/fast'), { key: rrKey }), 404, 'model_not_found', 'model');
    expectError(await chat('fast'), 404, 'model_not_found', 'model');
    expectError(await call(rr('/v1/models/fast'), { method: 'DELETE', key: rrKey }), 404, 'model_not_found', 'model');
  });
});

describe('latency objectives (SLOs)', () => {
  const QUESTION = 'compute the derivative of sin x and recommend a recipe for dinner tonight';
  const routed = (headers: Record<string, string> = {}): Promise<JsonResponse> =>
    call(`${suite.base}/_semantic/router/v1/chat/completions`, { key: suite.keys.full, headers, body: { model: 'auto', messages: [{ role: 'user', content: QUESTION }] } });
  const routedTo = async (headers: Record<string, string> = {}): Promise<string> => {
    const res = await routed(headers);
    expect(res.status).toBe(200);
    return res.headers.get('x-service-routed-endpoint') ?? '';
  };
  /** One streamed turn on the direct route: a TTFT (and TPOT) measurement for the endpoint. */
  const streamed = async (slug: string, firstTokenDelayMs: number): Promise<void> => {
    const res = await fetch(`${suite.base}/${slug}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }], sim: { tokens: 4, first_token_delay_ms: firstTokenDelayMs } }),
    });
    expect(res.status).toBe(200);
    await res.text();
  };
  const slos = (body?: object, key = suite.keys.full): Promise<JsonResponse> => call(`${suite.base}/v1/slos`, { key, ...(body ? { body } : {}) });
  let winner = '';
  let other = '';

  it('routes by similarity while no endpoint has an objective', async () => {
    winner = await routedTo();
    expect(['math', 'chat']).toContain(winner);
    other = winner === 'math' ? 'chat' : 'math';
    for (let i = 0; i < 3; i++) {
      await streamed(winner, 300);
      await streamed(other, 0);
      await streamed('vision', 300);
    }
    // Measurements alone change nothing: no objective, nothing to miss.
    expect(await routedTo()).toBe(winner);
  });

  it('prefers the endpoint meeting the X-SLO-TTFT-Ms objective and ignores an invalid header', async () => {
    expect(await routedTo({ 'X-SLO-TTFT-Ms': '150' })).toBe(other);
    expect(await routedTo({ 'X-SLO-TTFT-Ms': 'soon' })).toBe(winner);
    expect(await routedTo({ 'X-SLO-TTFT-Ms': '-5' })).toBe(winner);
  });

  it('stores per-endpoint objectives, lists them, and routes by them when the request sets none', async () => {
    const winnerId = winner === 'math' ? R_MATH : R_CHAT;
    const created = await slos({ endpoint: winner, ttft_ms: 150 });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ object: 'slo', endpoint_id: winnerId, endpoint_slug: winner, ttft_ms: 150, tpot_ms: null, attainment: 'misses' });
    const replaced = await slos({ endpoint: winnerId, ttft_ms: 150, tpot_ms: 1000 });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ endpoint_slug: winner, ttft_ms: 150, tpot_ms: 1000 });
    const listed = await slos();
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ object: 'list', data: [{ endpoint_id: winnerId, ttft_ms: 150, tpot_ms: 1000 }] });
    expect(await routedTo()).toBe(other);
    // The request's own objective wins over the stored one: a lenient one lets similarity decide again.
    expect(await routedTo({ 'X-SLO-TTFT-Ms': '60000' })).toBe(winner);
  });

  it('reports attainment per endpoint on the router health route', async () => {
    const res = await call(`${suite.base}/v1/management/semantic-router/health`, { key: suite.keys.full });
    expect(res.status).toBe(200);
    const rows = (res.body as { slo_attainment: { endpoint_slug: string; attainment: string; measured: { samples: number } }[] }).slo_attainment;
    expect(rows.find((r) => r.endpoint_slug === winner)).toMatchObject({ attainment: 'misses', measured: { samples: 3 } });
    expect(rows.find((r) => r.endpoint_slug === other)).toMatchObject({ attainment: 'no_objective' });
  });

  it('refuses objectives on unknown or non-chat endpoints, empty objectives and bad values', async () => {
    expectError(await slos({ endpoint: 'nope', ttft_ms: 100 }), 404, 'endpoint_not_found', 'endpoint');
    expectError(await slos({ endpoint: 'embed', ttft_ms: 100 }), 400, 'invalid_request', 'endpoint');
    expectError(await slos({ endpoint: 'math' }), 400, 'invalid_request', 'ttft_ms');
    expectError(await slos({ endpoint: 'math', ttft_ms: 0 }), 400, 'invalid_request', 'ttft_ms');
    expectError(await slos({ endpoint: 'math', tpot: 5 }), 400, 'invalid_request', 'tpot');
    expectError(await slos({ endpoint: 'math', ttft_ms: 100 }, suite.keys.managementOnly), 403, 'scope_insufficient');
  });
});
