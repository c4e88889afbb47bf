/**
 * What a client and the operator see when the upstream fails: SPEC's envelope with the exact status and
 * code, a message saying what failed (the gateway's own credentials refused, a wrong base URL, a server
 * that cannot be reached), and one operator log line naming the endpoint, the server URL and the cause.
 * Also: the start-up warning for an api_key_env that is not set, and the semantic router leaving out an
 * endpoint whose only server is down.
 */
import { describe, expect, it } from 'vitest';
import { CHAT_ID, makeKeys, PROJECT, testConfig } from '../helpers/configs.js';
import { ERROR, logLines, WARN, waitForLog, type LogLine } from '../helpers/gateway-log.js';
import { call, expectError, errorOf } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess } from '../helpers/processes.js';
import { makeRouterKeys, R_CHAT, R_MATH, ROUTER_PROJECT, routerProject } from '../helpers/router-config.js';
import { useProcesses } from '../helpers/suite.js';

const BADPATH_ID = 'f0000000-0000-4000-8000-000000000001';
const NOWHERE_ID = 'f0000000-0000-4000-8000-000000000002';
const NOKEY_ID = 'f0000000-0000-4000-8000-000000000003';
const TTS_NOWHERE_ID = 'f0000000-0000-4000-8000-000000000004';
const UNSET_ENV = 'SB_TEST_UPSTREAM_KEY_NOT_SET';

function extraEndpoint(id: string, slug: string, upstream: Record<string, unknown>, kind = 'chat') {
  return { id, slug, name: slug, kind, tier: 'gpu', model: { id: `model-${slug}`, context_window: 8192 }, upstream: { model: 'sim-chat', ...upstream } };
}

const suite = useProcesses(async () => {
  const keys = makeKeys();
  const routerKeys = makeRouterKeys();
  const sim = await startSimulatorProcess();
  const origin = sim.url.replace(/\/v1$/, '');
  const config = testConfig(sim.url, keys);
  (config.projects[0]?.endpoints as unknown[]).push(
    extraEndpoint(BADPATH_ID, 'badpath', { base_url: `${origin}/nope` }),
    extraEndpoint(NOWHERE_ID, 'nowhere', { base_url: 'http://127.0.0.1:9/v1' }),
    extraEndpoint(NOKEY_ID, 'nokey', { base_url: sim.url, api_key_env: UNSET_ENV }),
    extraEndpoint(TTS_NOWHERE_ID, 'tts-nowhere', { base_url: 'http://127.0.0.1:9/v1', model: 'sim-tts' }, 'speech'),
  );
  // The router project, its math endpoint on a server that refuses connections (out after one failure).
  const router = routerProject(sim.url, routerKeys);
  const math = router.endpoints.find((e) => e.id === R_MATH) as { upstream: unknown };
  math.upstream = { base_url: 'http://127.0.0.1:9/v1', model: 'sim-chat', health: { failure_threshold: 1, cooldown_ms: 600_000 } };
  // Set but empty: as good as unset.
  const gw = await startGatewayProcess({ ...config, projects: [...config.projects, router] }, { env: { [UNSET_ENV]: '' } });
  return { sim, gw, keys, routerKeys, origin };
});

const chat = (slug: string, body: Record<string, unknown> = {}) =>
  call(`${suite.gw.url}/${PROJECT}/${slug}/v1/chat/completions`, { key: suite.keys.full, body: { model: 'x', messages: [{ role: 'user', content: 'hi' }], ...body } });

/** The operator's line for one request: found by its request id. */
async function lineFor(requestId: string | null): Promise<LogLine> {
  return waitForLog(suite.gw, (l) => l.request_id === requestId && typeof l.cause === 'string');
}

describe('upstream failures', () => {
  it("401 from upstream: 500 internal_error saying the gateway's own credentials were refused, and an error line", async () => {
    const res = await chat('chat', { sim: { error_status: 401 } });
    expectError(res, 500, 'internal_error');
    expect(errorOf(res).message).toMatch(/refused the gateway's own credentials \(HTTP 401 from upstream\)/);
    // The gateway's own configuration: no client retry can fix it.
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(await lineFor(res.headers.get('x-request-id'))).toMatchObject({
      level: ERROR,
      project: PROJECT,
      endpoint: 'chat',
      endpoint_id: CHAT_ID,
      server: suite.sim.url,
      cause: `HTTP 401 from ${suite.sim.url}/chat/completions`,
    });
  });

  it('the same for a streamed turn: the error comes before any SSE byte', async () => {
    const res = await chat('chat', { stream: true, sim: { error_status: 403 } });
    expectError(res, 500, 'internal_error');
    expect(errorOf(res).message).toMatch(/HTTP 403 from upstream/);
    expect((await lineFor(res.headers.get('x-request-id'))).cause).toBe(`HTTP 403 from ${suite.sim.url}/chat/completions`);
  });

  it('404 from upstream: 500 internal_error naming a misconfigured base URL', async () => {
    const res = await chat('badpath');
    expectError(res, 500, 'internal_error');
    expect(errorOf(res).message).toMatch(/no such route \(HTTP 404 from upstream\): this endpoint's upstream base URL is misconfigured/);
    expect(await lineFor(res.headers.get('x-request-id'))).toMatchObject({ level: ERROR, endpoint: 'badpath', server: `${suite.origin}/nope`, cause: `HTTP 404 from ${suite.origin}/nope/chat/completions` });
  });

  it('an unreachable server (port 9): 500 internal_error saying the connection was refused', async () => {
    const res = await chat('nowhere');
    expectError(res, 500, 'internal_error');
    expect(errorOf(res).message).toMatch(/could not be reached \(connection refused\)/);
    expect(await lineFor(res.headers.get('x-request-id'))).toMatchObject({ level: ERROR, endpoint: 'nowhere', server: 'http://127.0.0.1:9/v1', cause: 'ECONNREFUSED 127.0.0.1:9' });
  });

  it('an overloaded server (503): 500 internal_error saying so; a 429 keeps its 429 capacity_exceeded', async () => {
    const res = await chat('plain', { sim: { error_status: 503 } });
    expectError(res, 500, 'internal_error');
    expect(errorOf(res).message).toMatch(/overloaded or unavailable \(HTTP 503 from upstream\)/);
    expect(await lineFor(res.headers.get('x-request-id'))).toMatchObject({ level: WARN, endpoint: 'plain', cause: `HTTP 503 from ${suite.sim.url}/chat/completions` });
    const limited = await chat('plain', { sim: { error_status: 429, retry_after: 3 } });
    expectError(limited, 429, 'capacity_exceeded');
    expect(errorOf(limited)).toMatchObject({ retry_after: 3, message: expect.stringMatching(/overloaded \(HTTP 429 from upstream\)/) });
  });

  it('audio goes through the same client: a speech endpoint on port 9 gets the same 500 and line', async () => {
    const res = await call(`${suite.gw.url}/${PROJECT}/tts-nowhere/v1/audio/speech`, { key: suite.keys.full, body: { model: 'x', input: 'hello', voice: 'alloy' } });
    expectError(res, 500, 'internal_error');
    expect(errorOf(res).message).toMatch(/connection refused/);
    expect(await lineFor(res.headers.get('x-request-id'))).toMatchObject({ endpoint: 'tts-nowhere', cause: 'ECONNREFUSED 127.0.0.1:9' });
  });

  it('warns at start-up about an api_key_env that is not set', () => {
    const warned = logLines(suite.gw).filter((l) => l.api_key_env === UNSET_ENV);
    expect(warned).toEqual([expect.objectContaining({ level: WARN, endpoint: 'nokey', server: suite.sim.url, msg: expect.stringMatching(/api_key_env is not set/) })]);
  });

  it('the semantic router leaves out an endpoint whose only server is down', async () => {
    const base = `${suite.gw.url}/${ROUTER_PROJECT}`;
    const rule = await call(`${base}/v1/management/semantic-router/rules`, { key: suite.routerKeys.full, body: { name: 'math', query_contains: ['derivative'], endpoint_id: R_MATH, fallback_to_classification: true } });
    expect(rule.status).toBe(201);
    const routed = () => call(`${base}/_semantic/router/v1/chat/completions`, { key: suite.routerKeys.full, body: { model: 'x', messages: [{ role: 'user', content: 'compute the derivative of sin x' }] } });
    // Nothing is known of the server yet: the rule sends the turn there, and the refusal takes it out.
    const first = await routed();
    expectError(first, 500, 'internal_error');
    const second = await routed();
    expect(second.status).toBe(200);
    expect(second.headers.get('x-service-routed-endpoint')).not.toBe('math');
    const health = await call(`${base}/v1/management/semantic-router/health`, { key: suite.routerKeys.full });
    const upstreams = (health.body as { upstreams: { endpoint_id: string; healthy: boolean }[] }).upstreams;
    expect(upstreams.find((u) => u.endpoint_id === R_MATH)?.healthy).toBe(false);
    expect(upstreams.find((u) => u.endpoint_id === R_CHAT)?.healthy).toBe(true);
  });
});
