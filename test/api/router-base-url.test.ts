/**
 * The router base URL as a complete OpenAI base URL (issue 21): GET .../models lists the routed
 * pseudo-model and what the workspace's routed turns may be served by, within the key's reach; and a turn
 * that asks for reasoning is routed only among endpoints whose model accepts it (the reasoning filter).
 */
import { describe, expect, it } from 'vitest';
import { useBaseUrlSuite } from '../helpers/base-url-config.js';
import { PROJECT } from '../helpers/configs.js';
import { call, expectError, type JsonResponse } from '../helpers/http.js';
import { R_VISION, ROUTER_PROJECT, WS_MAIN, WS_SOLO } from '../helpers/router-config.js';

const suite = useBaseUrlSuite();

const base = (project: string, workspace?: string): string => `${suite.gw.url}/${project}${workspace ? `/${workspace}` : ''}/_semantic/router/v1`;
const list = (url: string, key: string, headers: Record<string, string> = {}): Promise<JsonResponse> => call(`${url}/models`, { key, headers });
/** The pseudo-model, then the served models sorted (their order is the catalog's). */
const ids = (res: JsonResponse): string[] => {
  const [first, ...rest] = (res.body as { data: { id: string }[] }).data.map((m) => m.id);
  return [first ?? '', ...rest.sort()];
};

describe('GET /models on the router base URL', () => {
  it('lists the routed pseudo-model first, then the models of the workspace routed turns may be served by', async () => {
    const res = await list(base(ROUTER_PROJECT), suite.routerKeys.full);
    expect(res.status).toBe(200);
    expect((res.body as { object: string }).object).toBe('list');
    // The suspended endpoint and the other workspaces' endpoint are not routable here.
    expect(ids(res)).toEqual(['auto', 'model-chat', 'model-math', 'model-vision']);
    for (const item of (res.body as { data: Record<string, unknown>[] }).data) {
      expect(Object.keys(item).sort()).toEqual(['created', 'id', 'object', 'owned_by']);
      expect(item).toMatchObject({ object: 'model', owned_by: ROUTER_PROJECT, created: expect.any(Number) });
    }
  });

  it('lists the pinned workspace of the path, or the one named by X-Workspace-Id', async () => {
    expect(ids(await list(base(ROUTER_PROJECT, WS_SOLO), suite.routerKeys.full))).toEqual(['auto', 'model-solo']);
    expect(ids(await list(base(ROUTER_PROJECT), suite.routerKeys.full, { 'x-workspace-id': WS_SOLO }))).toEqual(['auto', 'model-solo']);
  });

  it("shows a confined key only its workspace's models, and a bound key only its endpoint's", async () => {
    expect(ids(await list(base(ROUTER_PROJECT), suite.extra.routerSolo))).toEqual(['auto', 'model-solo']);
    expectError(await list(base(ROUTER_PROJECT, WS_MAIN), suite.extra.routerSolo), 403, 'workspace_not_allowed');
    expect(ids(await list(base(ROUTER_PROJECT), suite.extra.routerMathOnly))).toEqual(['auto', 'model-math']);
  });

  it('leaves out endpoints the project excludes from routing', async () => {
    const config = `${suite.gw.url}/${ROUTER_PROJECT}/v1/management/semantic-router/config`;
    const exclude = (excluded: string[]) => call(config, { method: 'PATCH', key: suite.routerKeys.full, body: { semantic_router_excluded_endpoint_ids: excluded } });
    expect((await exclude([R_VISION])).status).toBe(200);
    try {
      expect(ids(await list(base(ROUTER_PROJECT), suite.routerKeys.full))).toEqual(['auto', 'model-chat', 'model-math']);
    } finally {
      expect((await exclude([])).status).toBe(200);
    }
  });

  it('retrieves one model of the list, and answers 404 model_not_found for any other', async () => {
    const auto = await call(`${base(ROUTER_PROJECT)}/models/auto`, { key: suite.routerKeys.full });
    expect(auto.status).toBe(200);
    expect(auto.body).toMatchObject({ id: 'auto', object: 'model', owned_by: ROUTER_PROJECT });
    expect((await call(`${base(ROUTER_PROJECT)}/models/model-math`, { key: suite.routerKeys.full })).body).toMatchObject({ id: 'model-math' });
    expectError(await call(`${base(ROUTER_PROJECT)}/models/model-solo`, { key: suite.routerKeys.full }), 404, 'model_not_found', 'model');
    expect((await call(`${base(ROUTER_PROJECT, WS_SOLO)}/models/model-solo`, { key: suite.routerKeys.full })).status).toBe(200);
  });

  it('needs an inference key', async () => {
    expectError(await call(`${base(ROUTER_PROJECT)}/models`), 401, 'authentication_required');
    expectError(await list(base(ROUTER_PROJECT), suite.routerKeys.managementOnly), 403, 'scope_insufficient');
  });
});

interface Decision {
  readonly decision_request_id: string;
  readonly [field: string]: unknown;
}

describe('reasoning turns on the router', () => {
  const turn = (project: string, key: string, extra: Record<string, unknown>) =>
    call(`${base(project)}/chat/completions`, { key, body: { model: 'auto', messages: [{ role: 'user', content: 'think about prime numbers' }], ...extra } });

  async function decisionFor(res: JsonResponse): Promise<Decision> {
    const rows = await call(`${suite.gw.url}/${PROJECT}/v1/management/semantic-router/decisions?limit=200`, { key: suite.keys.full });
    const found = (rows.body as { data: Decision[] }).data.find((d) => d.decision_request_id === res.headers.get('x-request-id'));
    if (!found) throw new Error('no decision row');
    return found;
  }

  it('would land a plain turn on the default endpoint, which does not reason', async () => {
    const res = await turn(PROJECT, suite.keys.full, {});
    expect(res.status).toBe(200);
    expect(res.headers.get('x-service-routed-endpoint')).toBe('chat');
  });

  it('routes a reasoning_effort turn among reasoning endpoints only and counts the rest under filtered_out.reasoning', async () => {
    const res = await turn(PROJECT, suite.keys.full, { reasoning_effort: 'high' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-service-routed-endpoint')).toBe('reasoner');
    expect(res.headers.get('x-service-routed-model')).toBe('acme/model-reasoner');
    const row = await decisionFor(res);
    // chat, plain and small do not reason; reasoner and slow do.
    expect(row.filtered_out).toMatchObject({ reasoning: 3, modality: 0, context_window: 0, tool_calling: 0, structured_output: 0 });
    const dropped = (row.candidates as { slug: string; dropped_by: string | null }[]).filter((c) => c.dropped_by === 'reasoning').map((c) => c.slug);
    expect(dropped.sort()).toEqual(['chat', 'plain', 'small']);
  });

  it('sends reasoning.max_tokens to the one model that can enforce a thinking budget', async () => {
    const res = await turn(PROJECT, suite.keys.full, { reasoning: { effort: 'low', max_tokens: 256 } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-service-routed-endpoint')).toBe('reasoner');
    expect(await decisionFor(res)).toMatchObject({ route_reason: 'single_endpoint', filtered_out: { reasoning: 4 } });
  });

  it('answers 400 unsupported_parameter when no endpoint of the workspace reasons, naming the field sent', async () => {
    expectError(await turn(ROUTER_PROJECT, suite.routerKeys.full, { reasoning_effort: 'low' }), 400, 'unsupported_parameter', 'reasoning_effort');
    expectError(await turn(ROUTER_PROJECT, suite.routerKeys.full, { reasoning: { max_tokens: 100 } }), 400, 'unsupported_parameter', 'reasoning.max_tokens');
  });

  it("answers a reasoning model's refusal when none accepts the value: unsupported_value for effort none", async () => {
    expectError(await turn(PROJECT, suite.keys.full, { reasoning_effort: 'none' }), 400, 'unsupported_value', 'reasoning_effort');
  });

  it('does not treat reasoning.exclude alone as a request for reasoning', async () => {
    const res = await turn(ROUTER_PROJECT, suite.routerKeys.full, { reasoning: { exclude: true } });
    expect(res.status).toBe(200);
  });
});
