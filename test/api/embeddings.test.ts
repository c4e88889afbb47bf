/**
 * POST .../v1/embeddings on an embedding endpoint and on the router base URLs (issue 21): admission like
 * chat (key, endpoint, kind, budget), validation at the edge, the client's bytes forwarded with only
 * `model` replaced, the answer returned with `model` echoing the request's, one usage row per call, and
 * the upstream call aborted with the client or at the tier's deadline.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BARE_VECTOR,
  CAPPED_ID,
  CAPPED_TOKENS,
  EDGE_PROJECT,
  EMBED_PROJECT,
  TPM_PROJECT,
  useBaseUrlSuite,
  VEC_ID,
  WS_ONE,
  WS_TWO,
} from '../helpers/base-url-config.js';
import { EMBED_ID, PROJECT, WS_DEFAULT } from '../helpers/configs.js';
import { call, errorOf, expectError, type JsonResponse } from '../helpers/http.js';
import { R_EMBED, ROUTER_PROJECT, WS_EMPTY, WS_MAIN } from '../helpers/router-config.js';
import { lastSimRequest, simSeq } from '../helpers/simulator-log.js';
import { openUsageDb, type UsageDb, type UsageEventRow } from '../helpers/usage-db.js';

const suite = useBaseUrlSuite();
let usage: UsageDb;

beforeAll(() => {
  usage = openUsageDb(suite.gw.dbPath);
});

afterAll(() => {
  usage?.close();
});

const directUrl = (project: string, slug: string): string => `${suite.gw.url}/${project}/${slug}/v1/embeddings`;
const routerUrl = (project: string, workspace?: string): string => `${suite.gw.url}/${project}${workspace ? `/${workspace}` : ''}/_semantic/router/v1/embeddings`;
const embed = (url: string, body: object | string, key = suite.keys.full, headers: Record<string, string> = {}): Promise<JsonResponse> => call(url, { key, body, headers });
const requestIdOf = (res: JsonResponse): string => res.headers.get('x-request-id') ?? '';

interface EmbeddingsBody {
  object: string;
  model: string;
  data: { object: string; index: number; embedding: number[] | string }[];
  usage: { prompt_tokens: number; total_tokens: number };
}

/** 120 ASCII characters: 30 tokens at the simulator's 4 bytes a token. */
const THIRTY_TOKENS = 'x'.repeat(120);

async function rowWhere(predicate: (r: UsageEventRow) => boolean, timeoutMs = 3000): Promise<UsageEventRow> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const row = usage.recent(50).find(predicate);
    if (row) return row;
    if (Date.now() > until) throw new Error('no matching usage row');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the direct embeddings route', () => {
  it('forwards the body with only model replaced and echoes the request model in the answer', async () => {
    const body = { model: 'text-embedding-3-small', input: ['the cat sat', 'a dog ran'], encoding_format: 'float', dimensions: 8, user: 'u-1', extra_field: { kept: true } };
    const res = await embed(directUrl(PROJECT, 'embed'), body);
    expect(res.status).toBe(200);
    const answer = res.body as EmbeddingsBody;
    expect(answer).toMatchObject({ object: 'list', model: 'text-embedding-3-small' });
    expect(answer.data.map((d) => [d.index, (d.embedding as number[]).length])).toEqual([
      [0, 8],
      [1, 8],
    ]);
    // The simulator counts ceil(bytes / 4) per input: 11 and 9 bytes.
    expect(answer.usage.prompt_tokens).toBe(3 + 3);
    expect(requestIdOf(res)).toMatch(/^req_[0-9a-f]{24}$/);
    const seen = await lastSimRequest(suite.sim.url);
    expect(seen.path).toBe('/v1/embeddings');
    // The test project's embedding endpoint names sim-chat as its upstream model.
    expect(JSON.parse(seen.body)).toEqual({ ...body, model: 'sim-chat' });
  });

  it('accepts token-id input and base64 vectors, untouched', async () => {
    const res = await embed(directUrl(PROJECT, 'embed'), { model: 'm', input: [[1, 2, 3], [4]], encoding_format: 'base64' });
    expect(res.status).toBe(200);
    const answer = res.body as EmbeddingsBody;
    expect(answer.data).toHaveLength(2);
    expect(typeof answer.data[0]?.embedding).toBe('string');
    expect(answer.usage.prompt_tokens).toBe(4);
  });

  it('writes one usage row with the prompt tokens the model server reported', async () => {
    const res = await embed(directUrl(PROJECT, 'embed'), { model: 'm', input: THIRTY_TOKENS });
    const row = await usage.waitForRow(requestIdOf(res));
    expect(row).toMatchObject({
      route: 'embeddings',
      endpoint_id: EMBED_ID,
      workspace_id: WS_DEFAULT,
      key_id: usage.keyIdFor(suite.keys.full),
      prompt_tokens: 30,
      completion_tokens: 0,
      status: 'completed',
      usage_source: 'upstream',
    });
    expect((res.body as EmbeddingsBody).usage.prompt_tokens).toBe(30);
    expect(usage.rowsFor(requestIdOf(res))).toHaveLength(1);
  });

  it('refuses an endpoint that is not an embedding endpoint with 400 invalid_request, before reading the body', async () => {
    const before = await simSeq(suite.sim.url);
    const res = await embed(directUrl(PROJECT, 'chat'), { model: 'm', input: 'hello' });
    expectError(res, 400, 'invalid_request');
    expect(String(errorOf(res).message)).toContain('needs an embedding endpoint');
    expectError(await embed(directUrl(PROJECT, 'chat'), 'not json at all'), 400, 'invalid_request');
    expect(await simSeq(suite.sim.url)).toBe(before);
  });

  it('validates the body at the edge, naming the field in param, and sends nothing upstream', async () => {
    const before = await simSeq(suite.sim.url);
    const cases: [object | string, string | null][] = [
      [{ model: 'm' }, 'input'],
      [{ model: 'm', input: '' }, 'input'],
      [{ model: 'm', input: [] }, 'input'],
      [{ model: 'm', input: ['ok', ''] }, 'input[1]'],
      [{ model: 'm', input: ['ok', 3] }, 'input[1]'],
      [{ model: 'm', input: [1, 2.5] }, 'input[1]'],
      [{ model: 'm', input: [[1], [2, -1]] }, 'input[1][1]'],
      [{ model: 'm', input: [[1], []] }, 'input[1]'],
      [{ model: 'm', input: { text: 'x' } }, 'input'],
      [{ input: 'x' }, 'model'],
      [{ model: '', input: 'x' }, 'model'],
      [{ model: 'm', input: 'x', encoding_format: 'hex' }, 'encoding_format'],
      [{ model: 'm', input: 'x', dimensions: 0 }, 'dimensions'],
      [{ model: 'm', input: 'x', dimensions: 1.5 }, 'dimensions'],
      [{ model: 'm', input: 'x', user: 7 }, 'user'],
      [['not', 'an', 'object'], null],
      // OpenAI's 2,048 inputs: 100,000 held ~1 GB of answer in the gateway, 300,000 overflowed its answer cap (a 500).
      [{ model: 'm', input: Array.from({ length: 2049 }, () => 'x') }, 'input'],
      [{ model: 'm', input: Array.from({ length: 2049 }, () => [1]) }, 'input'],
    ];
    for (const [body, param] of cases) expectError(await embed(directUrl(PROJECT, 'embed'), body), 400, 'invalid_request', param);
    expectError(await embed(directUrl(PROJECT, 'embed'), '{"model":'), 400, 'invalid_json');
    expect(await simSeq(suite.sim.url)).toBe(before);
  });

  it('accepts null for the optional fields, as common clients send them', async () => {
    const res = await embed(directUrl(PROJECT, 'embed'), { model: 'm', input: 'x', encoding_format: null, dimensions: null, user: null });
    expect(res.status).toBe(200);
  });

  it('keeps the authentication and reach checks of every keyed route', async () => {
    const body = { model: 'm', input: 'x' };
    expectError(await call(directUrl(PROJECT, 'embed'), { body }), 401, 'authentication_required');
    expectError(await embed(directUrl(PROJECT, 'embed'), body, suite.keys.managementOnly), 403, 'scope_insufficient');
    expectError(await embed(directUrl(PROJECT, 'nope'), body), 404, 'endpoint_not_found');
    expectError(await embed(directUrl(PROJECT, 'embed'), body, suite.keys.endpointBound), 403, 'endpoint_restricted');
    expectError(await embed(directUrl(EMBED_PROJECT, 'vec'), body, suite.extra.embedTwo), 403, 'workspace_not_allowed');
  });

  it('maps a model server refusal to the catalogue and charges the call as an error', async () => {
    const limited = await embed(directUrl(PROJECT, 'embed'), { model: 'm', input: 'x', sim: { error_status: 429, retry_after: 7 } });
    expectError(limited, 429, 'capacity_exceeded');
    expect(errorOf(limited).retry_after).toBe(7);
    expect(limited.headers.get('retry-after')).toBe('7');
    expect(await usage.waitForRow(requestIdOf(limited))).toMatchObject({ route: 'embeddings', status: 'error', prompt_tokens: 0 });
    expectError(await embed(directUrl(PROJECT, 'embed'), { model: 'm', input: 'x', sim: { error_status: 503 } }), 500, 'internal_error');
    expectError(await embed(directUrl(PROJECT, 'embed'), { model: 'm', input: 'x', sim: { error_status: 400 } }), 400, 'invalid_request');
  });

  it('adds model and charges an estimate when the model server reports neither', async () => {
    const res = await embed(directUrl(EDGE_PROJECT, 'bare'), { model: 'my-embedder', input: 'x'.repeat(40) }, suite.extra.edge);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: BARE_VECTOR }], model: 'my-embedder' });
    expect(await usage.waitForRow(requestIdOf(res))).toMatchObject({ status: 'completed', usage_source: 'estimated', prompt_tokens: 10 });
  });

  it('answers 500 internal_error when the model server answers with something that is not JSON', async () => {
    expectError(await embed(directUrl(EDGE_PROJECT, 'broken'), { model: 'm', input: 'x' }, suite.extra.edge), 500, 'internal_error');
  });

  it('aborts the upstream call when the client goes away, and charges nothing', async () => {
    const before = suite.upstream.stalled.length;
    const controller = new AbortController();
    const pending = fetch(directUrl(EDGE_PROJECT, 'hang'), {
      method: 'POST',
      headers: { authorization: `Bearer ${suite.extra.edge}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', input: 'wait for me' }),
      signal: controller.signal,
    }).catch((err: unknown) => err);
    const stalled = await suite.upstream.waitForStall(before + 1);
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    await stalled.closed;
    expect(await rowWhere((r) => r.route === 'embeddings' && r.status === 'aborted')).toMatchObject({ prompt_tokens: 0, completion_tokens: 0 });
  });

  it("answers 408 timeout at the tier's deadline and closes the upstream call", async () => {
    const before = suite.upstream.stalled.length;
    const started = Date.now();
    const res = await embed(directUrl(EDGE_PROJECT, 'hang-free'), { model: 'm', input: 'too slow' }, suite.extra.edge);
    expectError(res, 408, 'timeout');
    // The free tier's request deadline in test configs is 1.5 s.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
    await (await suite.upstream.waitForStall(before + 1)).closed;
    expect(await usage.waitForRow(requestIdOf(res))).toMatchObject({ status: 'timeout', prompt_tokens: 0 });
  });

  it('spends endpoint budgets: the call after the cap is refused with 429 endpoint_budget_exhausted', async () => {
    const first = await embed(directUrl(EMBED_PROJECT, 'z-capped'), { model: 'm', input: THIRTY_TOKENS }, suite.extra.embedFull);
    expect(first.status).toBe(200);
    // A key that reaches the whole project runs where the endpoint serves (WS_ONE), as on every direct route.
    expect(await usage.waitForRow(requestIdOf(first))).toMatchObject({ endpoint_id: CAPPED_ID, workspace_id: WS_ONE, prompt_tokens: CAPPED_TOKENS });
    expectError(await embed(directUrl(EMBED_PROJECT, 'z-capped'), { model: 'm', input: 'x' }, suite.extra.embedFull), 429, 'endpoint_budget_exhausted');
  });

  it("counts toward the project's token rate limit", async () => {
    const first = await embed(directUrl(TPM_PROJECT, 'vec'), { model: 'm', input: THIRTY_TOKENS }, suite.extra.tpm);
    expect(first.status).toBe(200);
    await usage.waitForRow(requestIdOf(first));
    expectError(await embed(directUrl(TPM_PROJECT, 'vec'), { model: 'm', input: 'x' }, suite.extra.tpm), 429, 'token_rate_limit_exceeded');
  });
});

describe('embeddings on the router base URL', () => {
  it("serves the project's embedding endpoint and names it in the routed headers", async () => {
    const body = { model: 'text-embedding-3-small', input: 'compute the derivative of sin x' };
    const res = await embed(routerUrl(ROUTER_PROJECT), body, suite.routerKeys.full);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-service-routed-endpoint')).toBe('embed');
    expect(res.headers.get('x-service-routed-model')).toBe('sim-embed');
    expect(res.body).toMatchObject({ object: 'list', model: 'text-embedding-3-small' });
    expect(JSON.parse((await lastSimRequest(suite.sim.url)).body)).toEqual({ ...body, model: 'sim-embed' });
    expect(await usage.waitForRow(requestIdOf(res))).toMatchObject({ route: 'embeddings', endpoint_id: R_EMBED, workspace_id: WS_MAIN, status: 'completed' });
  });

  it('serves a workspace named in the path, even one without generative endpoints', async () => {
    const res = await embed(routerUrl(ROUTER_PROJECT, WS_EMPTY), { model: 'm', input: 'x' }, suite.routerKeys.full);
    expect(res.status).toBe(200);
    expect(await usage.waitForRow(requestIdOf(res))).toMatchObject({ endpoint_id: R_EMBED, workspace_id: WS_EMPTY });
  });

  it('validates the body like the direct route', async () => {
    expectError(await embed(routerUrl(ROUTER_PROJECT), { model: 'm', input: [] }, suite.routerKeys.full), 400, 'invalid_request', 'input');
    expectError(await embed(routerUrl(ROUTER_PROJECT), { model: 'm', input: 'x' }, suite.routerKeys.managementOnly), 403, 'scope_insufficient');
  });

  it("keeps to the key's reach: named or confined workspaces must be served, a bound key keeps to its endpoint", async () => {
    // The project default (WS_TWO) has no embedding endpoint; a key that reaches the whole project is served anyway.
    const open = await embed(routerUrl(EMBED_PROJECT), { model: 'm', input: 'x' }, suite.extra.embedFull);
    expect(open.status).toBe(200);
    expect(open.headers.get('x-service-routed-endpoint')).toBe('vec');
    expect(await usage.waitForRow(requestIdOf(open))).toMatchObject({ endpoint_id: VEC_ID, workspace_id: WS_ONE });

    expectError(await embed(routerUrl(EMBED_PROJECT, WS_TWO), { model: 'm', input: 'x' }, suite.extra.embedFull), 404, 'endpoint_not_found');
    expectError(await embed(routerUrl(EMBED_PROJECT), { model: 'm', input: 'x' }, suite.extra.embedTwo), 404, 'endpoint_not_found');
    expectError(await embed(routerUrl(EMBED_PROJECT, WS_ONE), { model: 'm', input: 'x' }, suite.extra.embedTwo), 403, 'workspace_not_allowed');
    expectError(await embed(routerUrl(ROUTER_PROJECT), { model: 'm', input: 'x' }, suite.extra.routerMathOnly), 403, 'endpoint_restricted');
    expectError(await embed(routerUrl('proj_other'), { model: 'm', input: 'x' }, suite.keys.otherProject), 404, 'endpoint_not_found');
  });
});
