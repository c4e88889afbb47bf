/**
 * The multimodel route takes "the same bodies" as the single-model route (SPEC "Chat completions and
 * routing"), so the chat body's request-level refusals and SPEC's timeout rules hold on it too.
 * Regressions: a decomposed turn answered `store: true` in a zero-data-retention workspace with 200,
 * `modalities: ["text", "audio"]` with a text-only answer (no 400 without a speech endpoint, no
 * `message.audio` with one), and a streamed timeout as a `data:` frame of the 408 envelope (type
 * `timeout`) then `[DONE]`, where SPEC sends the SSE `error` event with type `timeout_error`.
 */
import { describe, expect, it } from 'vitest';
import { PLANNER_MARKER } from '../../src/core/multimodel/planner-prompt.js';
import { call, expectError } from '../helpers/http.js';
import { FREE_TIER_TIMEOUTS, makeKeys, testConfig } from '../helpers/configs.js';
import { mintTestKey, startGatewayProcess, startSimulatorProcess } from '../helpers/processes.js';
import { makeRouterKeys, ROUTER_PROJECT, routerProject } from '../helpers/router-config.js';
import { simRequests, simSeq } from '../helpers/simulator-log.js';
import { parseSse } from '../helpers/sse.js';
import { useProcesses } from '../helpers/suite.js';

const ZDR_PROJECT = 'proj_zdr';
const WS_ZDR = 'ws_2d2d2d';
const zdrKey = mintTestKey('zdr');

/** One chat model and a speech endpoint, in a workspace that forbids storing completions. */
function zdrProject(upstream: string) {
  return {
    id: ZDR_PROJECT,
    slug: 'zdr',
    default_workspace: WS_ZDR,
    workspaces: [{ id: WS_ZDR, name: 'Retention-free', zero_data_retention: true }],
    endpoints: [
      { id: 'e0000000-0000-4000-8000-000000000001', slug: 'chat', name: 'Chat', kind: 'chat', tier: 'gpu', model: { id: 'model-chat', context_window: 8192, capabilities: ['tools'] }, upstream: { base_url: upstream, model: 'sim-chat' } },
      { id: 'e0000000-0000-4000-8000-000000000002', slug: 'tts', name: 'Speech', kind: 'speech', tier: 'gpu', model: { id: 'model-tts', context_window: 8192 }, upstream: { base_url: upstream, model: 'sim-tts' } },
    ],
    keys: [{ value: zdrKey, scopes: ['inference'] }],
  };
}

/** One chat model on the free tier, whose test deadlines are short (FREE_TIER_TIMEOUTS). */
const SLOW_PROJECT = 'proj_slowmm';
const slowKey = mintTestKey('slowmm');
function slowProject(upstream: string) {
  return {
    id: SLOW_PROJECT,
    slug: 'slowmm',
    default_workspace: 'ws_3e3e3e',
    workspaces: [{ id: 'ws_3e3e3e', name: 'Slow' }],
    endpoints: [{ id: 'e0000000-0000-4000-8000-000000000003', slug: 'slow', name: 'Slow', kind: 'chat', tier: 'free', model: { id: 'model-slow', context_window: 8192 }, upstream: { base_url: upstream, model: 'sim-chat' } }],
    keys: [{ value: slowKey, scopes: ['inference'] }],
  };
}

const suite = useProcesses(async () => {
  const keys = makeRouterKeys();
  const sim = await startSimulatorProcess();
  const gw = await startGatewayProcess(testConfig(sim.url, makeKeys(), { extraProjects: [routerProject(sim.url, keys), zdrProject(sim.url), slowProject(sim.url)] }));
  return { sim, gw, keys };
});

const multimodel = (project: string, key: string, body: object) => call(`${suite.gw.url}/${project}/_semantic/router/v1/chat/completions/multimodel`, { key, body });
const ask = (extra: Record<string, unknown>) => ({ model: 'client-model', messages: [{ role: 'user', content: 'echo: good morning' }], ...extra });

/** Planner calls that reached the simulator during `run`. */
async function plannerCalls(run: () => Promise<unknown>): Promise<number> {
  const before = await simSeq(suite.sim.url);
  await run();
  const seen = (await simRequests(suite.sim.url, 100)).filter((r) => r.seq > before && r.path === '/v1/chat/completions');
  return seen.filter((r) => String((JSON.parse(r.body) as { messages: { content: unknown }[] }).messages[0]?.content).startsWith(PLANNER_MARKER)).length;
}

describe('request-level refusals on the multimodel route', () => {
  it('refuses store: true in a zero-data-retention workspace with 400 retention_not_permitted, before any planning', async () => {
    let status = 0;
    const planned = await plannerCalls(async () => {
      const res = await multimodel(ZDR_PROJECT, zdrKey, ask({ store: true }));
      expectError(res, 400, 'retention_not_permitted', 'store');
      status = res.status;
    });
    expect(status).toBe(400);
    expect(planned).toBe(0);
    expect((await multimodel(ZDR_PROJECT, zdrKey, ask({ store: false }))).status).toBe(200);
  });

  it('refuses modalities with audio with 400 on modalities when the project has no speech endpoint', async () => {
    const planned = await plannerCalls(async () => {
      const res = await multimodel(ROUTER_PROJECT, suite.keys.full, ask({ modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } }));
      expectError(res, 400, 'invalid_request', 'modalities');
    });
    expect(planned).toBe(0);
  });

  it('answers modalities with audio with message.audio when the project has a speech endpoint', async () => {
    const res = await multimodel(ZDR_PROJECT, zdrKey, ask({ modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } }));
    expect(res.status).toBe(200);
    const message = (res.body as { choices: { message: { content: string; audio?: { data: string; transcript: string } } }[] }).choices[0]?.message;
    expect(message?.content).toBe('good morning');
    expect(message?.audio?.transcript).toBe('good morning');
    expect(message?.audio?.data.length).toBe(9020);
  });
});

describe('timeouts on the multimodel route', () => {
  // Each dispatch is buffered: the simulator waits as long as its stream would take, past the free tier's
  // deadline by a whole deadline (the echoed answer is two events: 2 x request_ms). Half a deadline per event
  // put the answer at the deadline itself, and on a loaded machine it sometimes won the race.
  const slow = { sim: { tokens: 4, delay_ms: FREE_TIER_TIMEOUTS.request_ms } };

  it('answers 408 timeout when a buffered turn overruns the deadline', async () => {
    const res = await multimodel(SLOW_PROJECT, slowKey, ask(slow));
    expectError(res, 408, 'timeout');
  });

  it('ends a stream with the SSE error event of type timeout_error, without [DONE]', async () => {
    const res = await fetch(`${suite.gw.url}/${SLOW_PROJECT}/_semantic/router/v1/chat/completions/multimodel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${slowKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(ask({ ...slow, stream: true })),
    });
    expect(res.status).toBe(200);
    const frames = parseSse(await res.text());
    const errors = frames.filter((f) => f.event === 'error');
    expect(errors, JSON.stringify(frames).slice(0, 1500)).toHaveLength(1);
    expect(JSON.parse(errors[0]?.data ?? '{}')).toMatchObject({ error: { type: 'timeout_error', code: 'timeout', message: expect.any(String) } });
    expect(frames.some((f) => f.data === '[DONE]')).toBe(false);
    expect(frames.some((f) => f.event === null && f.data.includes('"error"'))).toBe(false);
  });
});
