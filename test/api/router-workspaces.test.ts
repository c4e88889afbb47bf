import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, testConfig } from '../helpers/configs.js';
import { call, errorOf, expectError, type JsonResponse } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { makeRouterKeys, R_MATH, R_PAUSED, R_SOLO, R_VISION, ROUTER_PROJECT, routerProject, WS_CONCRETE, WS_MAIN, WS_OPS, WS_SOLO, type RouterKeys } from '../helpers/router-config.js';

let sim: SimulatorProcess;
let gw: GatewayProcess;
let keys: RouterKeys;

const configWith = (drop: string[] = []) => {
  const project = routerProject(sim.url, keys);
  return testConfig(sim.url, makeKeys(), { extraProjects: [{ ...project, endpoints: project.endpoints.filter((e) => !drop.includes(e.id)) }] });
};

beforeAll(async () => {
  keys = makeRouterKeys();
  sim = await startSimulatorProcess();
  gw = await startGatewayProcess(configWith());
});

afterAll(async () => {
  await gw?.stop();
  await sim?.stop();
});

const base = (): string => `${gw.url}/${ROUTER_PROJECT}`;
const workspace = (id: string, body?: object): Promise<JsonResponse> =>
  call(`${base()}/v1/management/workspaces/${id}`, body ? { method: 'PATCH', key: keys.full, body } : { key: keys.full });
const routed = (headers: Record<string, string> = {}): Promise<JsonResponse> =>
  call(`${base()}/_semantic/router/v1/chat/completions`, { key: keys.full, headers, body: { model: 'm', messages: [{ role: 'user', content: 'compute the derivative of sin x' }] } });
const routedTo = (res: JsonResponse): string | null => res.headers.get('x-service-routed-endpoint');

describe('workspace inference_routing_mode (SPEC behaviour 9)', () => {
  it('shows the mode chosen, the default stamped at creation and the pin', async () => {
    const res = await workspace(WS_MAIN);
    expect(res.body).toEqual({
      id: WS_MAIN,
      object: 'workspace',
      name: 'Main',
      inference_routing_mode: null,
      inference_routing_mode_default: 'semantic',
      effective_routing_mode: 'semantic',
      inference_endpoint_id: null,
      operational: false,
      is_default: true,
      zero_data_retention: false,
      created_at: expect.any(Number),
    });
  });

  it('sets a mode, leaves it when omitted, and clears it with null', async () => {
    expect((await workspace(WS_MAIN, { inference_routing_mode: 'concrete' })).body).toMatchObject({ inference_routing_mode: 'concrete', effective_routing_mode: 'concrete' });
    expect(routedTo(await routed())).toBe('chat');
    expect((await workspace(WS_MAIN, {})).body).toMatchObject({ inference_routing_mode: 'concrete' });
    expect((await workspace(WS_MAIN, { inference_routing_mode: null })).body).toMatchObject({ inference_routing_mode: null, effective_routing_mode: 'semantic' });
    expect(routedTo(await routed())).toBe('math');
  });

  it('routes every turn to a pinned endpoint, and drops the pin when the mode is set to semantic or null', async () => {
    expect((await workspace(WS_MAIN, { inference_routing_mode: 'concrete', inference_endpoint_id: R_VISION })).body).toMatchObject({ inference_endpoint_id: R_VISION });
    expect(routedTo(await routed())).toBe('vision');
    expect((await workspace(WS_MAIN, { inference_routing_mode: 'semantic' })).body).toMatchObject({ inference_routing_mode: 'semantic', inference_endpoint_id: null });
    expect(routedTo(await routed())).toBe('math');
    await workspace(WS_MAIN, { inference_endpoint_id: R_VISION });
    expect((await workspace(WS_MAIN, { inference_routing_mode: null })).body).toMatchObject({ inference_endpoint_id: null });
  });

  it('refuses any other mode, and a pin sent together with a mode that drops it', async () => {
    expectError(await workspace(WS_MAIN, { inference_routing_mode: 'fast' }), 400, 'invalid_request', 'inference_routing_mode');
    expectError(await workspace(WS_MAIN, { inference_routing_mode: 1 }), 400, 'invalid_request', 'inference_routing_mode');
    expectError(await workspace(WS_MAIN, { inference_routing_mode: 'semantic', inference_endpoint_id: R_MATH }), 400, 'invalid_request', 'inference_endpoint_id');
    expectError(await workspace(WS_MAIN, { inference_endpoint_id: R_SOLO }), 400, 'invalid_request', 'inference_endpoint_id');
    // An unknown field is named in param (it answered param null, "The request body is not valid; got an object.").
    const unknown = await workspace(WS_MAIN, { routing_mode: 'semantic' });
    expectError(unknown, 400, 'invalid_request', 'routing_mode');
    expect(errorOf(unknown).message).toBe('routing_mode is not a field of this request; the fields are inference_routing_mode, inference_endpoint_id, is_default.');
    expectError(await workspace('ws_0f0f0f', {}), 404, 'workspace_not_found', 'workspace_id');
    expectError(await workspace('main', {}), 400, 'invalid_workspace_id', 'workspace_id');
  });

  it('refuses to make an operational workspace the default, and moves the default otherwise', async () => {
    expectError(await workspace(WS_OPS, { is_default: true }), 400, 'operational_default_forbidden', 'is_default');
    expect((await workspace(WS_SOLO, { is_default: true })).body).toMatchObject({ is_default: true });
    expect(routedTo(await routed())).toBe('solo');
    expect((await workspace(WS_MAIN)).body).toMatchObject({ is_default: false });
  });
});

describe('after a restart', () => {
  it('keeps API changes over the config file, and names a stale rule by its index', async () => {
    const rule = await call(`${base()}/v1/management/semantic-router/rules`, { key: keys.full, body: { query_contains: ['sonnet'], endpoint_id: R_PAUSED } });
    expect(rule.status).toBe(201);
    await workspace(WS_CONCRETE, { inference_routing_mode: 'semantic' });
    await call(`${base()}/v1/management/semantic-router/config`, { method: 'PATCH', key: keys.full, body: { semantic_router_similarity_floor: 0.42 } });

    await gw.stop();
    gw = await startGatewayProcess(configWith([R_PAUSED]), { dbPath: gw.dbPath });

    expect((await workspace(WS_CONCRETE)).body).toMatchObject({ inference_routing_mode: 'semantic' });
    expect((await workspace(WS_SOLO)).body).toMatchObject({ is_default: true });
    const config = await call(`${base()}/v1/management/semantic-router/config`, { key: keys.full });
    expect(config.body).toMatchObject({
      preferences: { semantic_router_similarity_floor: 0.42 },
      unavailable_endpoints: [{ endpoint_id: R_PAUSED, status: 'not_found', referenced_by: ['semantic_router_dynamic_rules[0].action.endpoint_id'] }],
    });

    const blocked = await call(`${base()}/v1/management/semantic-router/rules`, { key: keys.full, body: { query_contains: ['haiku'], endpoint_id: R_MATH } });
    expectError(blocked, 400, 'invalid_semantic_router_config', 'semantic_router_dynamic_rules[0].action.endpoint_id');
    const id = (rule.body as { id: string }).id;
    expect((await call(`${base()}/v1/management/semantic-router/rules/${id}`, { method: 'DELETE', key: keys.full })).status).toBe(204);
    expect((await call(`${base()}/v1/management/semantic-router/rules`, { key: keys.full, body: { query_contains: ['haiku'], endpoint_id: R_MATH } })).status).toBe(201);
  });
});
