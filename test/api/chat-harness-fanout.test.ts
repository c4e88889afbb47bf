/**
 * The fan-out nudge with server-owned tools (SPEC Passthrough 4): a bridged turn (`x_exec: true`) offers
 * the workspace's execution tools, which the gateway runs itself; with two or more of them the nudge asks
 * the model to call independent ones together. Real processes: simulator, gateway, a scripted agent over
 * a real WebSocket offering two read-only tools.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, WS_DEFAULT } from '../helpers/configs.js';
import { mintJoinKey } from '../helpers/exec-config.js';
import { connectTestAgent, echoTool, type TestAgent } from '../helpers/exec-test-agent.js';
import { call, type JsonResponse } from '../helpers/http.js';
import { mintTestKey, startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { simRequests, simSeq } from '../helpers/simulator-log.js';

type Json = Record<string, unknown>;
const keys = makeKeys();
const bridgeKey = mintTestKey('test');
let sim: SimulatorProcess;
let gw: GatewayProcess;
let agent: TestAgent;

beforeAll(async () => {
  sim = await startSimulatorProcess();
  gw = await startGatewayProcess({ ...testConfig(sim.url, keys, { extraKeys: [{ value: bridgeKey, scopes: ['inference', 'execution'] }] }), exec: { lease_ms: 1_800_000 } });
  agent = await connectTestAgent(gw.url, PROJECT, await mintJoinKey(gw.url, keys.full), {
    name: 'fanout-agent',
    workspaceIds: [WS_DEFAULT],
    tools: [echoTool, { name: 'clock', description: 'Tells the time', input_schema: { type: 'object', properties: {} }, risk: 'read' }],
  });
  agent.onDispatch((d) => agent.result(d.invocation_id, 0, { output: 'ok' }));
});

afterAll(async () => {
  await agent?.close();
  await gw?.stop();
  await sim?.stop();
});

async function bridged(headers: Record<string, string>): Promise<{ res: JsonResponse; first: Json }> {
  const seq = await simSeq(sim.url);
  const res = await call(`${gw.url}/${PROJECT}/chat/v1/chat/completions`, {
    key: bridgeKey,
    headers,
    body: { model: 'm', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'echo and tell the time' }], x_exec: true },
  });
  const turns = (await simRequests(sim.url, 20)).filter((r) => r.seq > seq).sort((a, b) => a.seq - b.seq);
  return { res, first: JSON.parse(turns[0]?.body ?? '{}') as Json };
}

describe('fan-out nudge with server-owned tools', () => {
  it('adds the nudge after the instructions when two execution tools are offered', async () => {
    const { res, first } = await bridged({ 'x-service-augment-fanout-nudge': 'on' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.headers.get('x-service-augmented')).toBe('fanout-nudge');
    const messages = first.messages as Json[];
    expect(messages.map((m) => m.role)).toEqual(['system', 'system', 'user']);
    expect(String(messages[1]?.content)).toMatch(/request all of them together/);
    expect((first.tools as Json[]).length).toBe(2);
  });

  it('sends the conversation as it is when off', async () => {
    const { res, first } = await bridged({ 'x-service-augment': 'on', 'x-service-augment-fanout-nudge': 'off' });
    expect(res.status).toBe(200);
    expect((first.messages as Json[]).map((m) => m.role)).toEqual(['system', 'user']);
    expect(res.headers.get('x-service-augmented')).toBeNull();
  });
});
