/**
 * Issue 31, items 1 and 2, reproduced against a real gateway: a join key's manifest stalled every project
 * (ajv compiled a 148 KiB manifest for seconds on the event loop, and again at the first invocation), and
 * a tool's `pattern` stalled it through V8's backtracking (`^([a-z0-9]+\.?)+$` against "aaa…a!"). Now the
 * manifest is bounded, compiled and checked on schema threads, patterns run on RE2, and connections of a
 * key are rate-limited.
 *
 * An outside probe then found the schema threads themselves shared in arrival order: one project's 4-6
 * invocations whose arguments each held the invocations' thread until its 2 s deadline delayed another
 * project's trivial invocation by 7.65-11.6 s. The lanes are now fair between projects.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execConfig, makeExecKeys, mintJoinKey, OTHER_PROJECT, PROJECT, WS_DEFAULT } from '../helpers/exec-config.js';
import { agentSocket, enroll, isRefused, openAgentSocket } from '../helpers/exec-agents.js';
import { advanceClock, call, expectError, type JsonResponse } from '../helpers/http.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/processes.js';

const keys = makeExecKeys();
const PER_KEY = 3;
/** OTHER_PROJECT's one workspace (helpers/configs.ts). */
const WS_OTHER = 'ws_0d0d0d';
let gw: GatewayProcess;

beforeAll(async () => {
  gw = await startGatewayProcess(execConfig(keys, { exec: { enrollments_per_minute_per_key: PER_KEY } }));
});

afterAll(async () => {
  await gw?.stop();
});

const connectUrl = (project = PROJECT): string => `${gw.url.replace(/^http/, 'ws')}/${project}/v1/exec/agents/connect`;
const props = (n: number, extra: Record<string, unknown> = {}) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: 'string', ...extra }]));
const tool = (name: string, input_schema: Record<string, unknown>) => ({ name, input_schema, risk: 'read', mcp_visible: true });

/** Enrolls on a fresh join key (each test stays under the per-key connection limit) and returns the first answer. */
async function enrollWith(name: string, tools: unknown[], project = PROJECT, managementKey = keys.exec) {
  const socket = await agentSocket(connectUrl(project), await mintJoinKey(gw.url, managementKey, project));
  socket.send(enroll(name, {}, tools));
  const answer = await Promise.race([socket.next('enrolled', 30_000), socket.next('error', 30_000)]);
  return { socket, answer };
}

describe('tool patterns run in linear time (issue 31 item 2)', () => {
  it('answers the catastrophic-backtracking argument in milliseconds, refusing it; a good host name is accepted', async () => {
    const host = { type: 'object', properties: { host: { type: 'string', pattern: '^([a-z0-9]+\\.?)+$' } }, required: ['host'] };
    const { socket, answer } = await enrollWith('resolver', [tool('resolve', host)]);
    expect(answer.type).toBe('enrolled');
    const invoke = (h: string) => call(`${gw.url}/${PROJECT}/v1/exec/invocations`, { key: keys.exec, body: { workspace_id: WS_DEFAULT, tool_name: 'resolve', arguments: { host: h } } });
    const started = performance.now();
    // 30 characters took 3-7.6 s before; 10,000 would never finish.
    const refused = await invoke(`${'a'.repeat(10_000)}!`);
    expect(performance.now() - started).toBeLessThan(2000);
    expectError(refused, 400, 'invalid_body', 'arguments/host');
    expect((refused.body as { error: { message: string } }).error.message).toContain('must match pattern');
    expect((await invoke('build01.example.com')).status).toBe(201);
    socket.ws.close();
  });

  it('refuses at enrollment a pattern RE2 cannot run (a backreference), naming the tool and the pattern', async () => {
    const { socket, answer } = await enrollWith('backref', [tool('ok', { type: 'object' }), tool('repeat', { type: 'object', properties: { w: { type: 'string', pattern: '^(\\w+) \\1$' } } })]);
    expect(answer).toMatchObject({ type: 'error', code: 'exec_manifest_invalid' });
    expect(answer.message).toMatch(/^manifest\.tools\[1\]\.input_schema \(repeat\) cannot be used: the pattern "\^\(\\\\w\+\) \\\\1\$" uses a backreference/);
    expect((await socket.closed()).code).toBe(4400);
  });
});

describe('manifests are bounded and compiled off the event loop (issue 31 item 1)', () => {
  it("refuses the issue's 148 KiB manifest (4 tools x 1,500 properties) with exec_manifest_invalid stating the bounds", async () => {
    const tools = Array.from({ length: 4 }, (_, i) => tool(`t${i}`, { type: 'object', properties: props(1500) }));
    expect(JSON.stringify(tools).length).toBeGreaterThan(140 * 1024);
    const { socket, answer } = await enrollWith('huge', tools);
    expect(answer).toMatchObject({ type: 'error', code: 'exec_manifest_invalid' });
    expect(answer.message).toMatch(/^manifest\.tools\[0\]\.input_schema \(t0\) declares more than 256 properties \(at most 256 properties, 1024 objects and arrays/);
    expect((await socket.closed()).code).toBe(4400);
  });

  it('keeps /healthz answering promptly while the largest allowed manifest compiles', async () => {
    // 8 tools x 256 patterned properties (a bound each): on the order of a second of ajv.
    const tools = Array.from({ length: 8 }, (_, i) => tool(`big${i}`, { type: 'object', properties: props(256, { pattern: `^[a-z]{1,${i + 1}}$` }), additionalProperties: false }));
    const socket = await agentSocket(connectUrl(), await mintJoinKey(gw.url, keys.exec));
    const sent = performance.now();
    socket.send(enroll('largest', {}, tools));
    let done = false;
    const enrolled = socket.next('enrolled', 60_000).finally(() => (done = true));
    const latencies: number[] = [];
    while (!done) {
      const t = performance.now();
      expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
      if (!done) latencies.push(performance.now() - t);
    }
    await enrolled;
    const enrollMs = performance.now() - sent;
    // On the event loop, one /healthz waited out the whole compile; off it, each answers in milliseconds.
    expect(latencies.length, `enrollment took ${enrollMs.toFixed(0)} ms`).toBeGreaterThanOrEqual(3);
    expect(Math.max(...latencies), `healthz latencies ${latencies.map((l) => l.toFixed(0)).join(',')} during a ${enrollMs.toFixed(0)} ms enrollment`).toBeLessThan(Math.min(500, enrollMs / 2));
    // The first invocation compiles nothing on the event loop either, and validates.
    const bad = await call(`${gw.url}/${PROJECT}/v1/exec/invocations`, { key: keys.exec, body: { workspace_id: WS_DEFAULT, tool_name: 'big3', arguments: { p0: 'TOO LONG' } } });
    expectError(bad, 400, 'invalid_body', 'arguments/p0');
    socket.ws.close();
  });
});

describe("one project's slow schema work does not hold another's", () => {
  it("answers project A's invocation while project B's slow arguments wait out their deadlines", async () => {
    const { socket: agentA, answer: enrolledA } = await enrollWith('fair-a', [tool('echo', { type: 'object', properties: { text: { type: 'string' } } })]);
    // ajv's uniqueItems compares the items pairwise: 30,000 objects (~400 KB) take several times the 2 s deadline.
    const dedupe = { type: 'object', properties: { items: { type: 'array', uniqueItems: true } } };
    const { socket: agentB, answer: enrolledB } = await enrollWith('fair-b', [tool('dedupe', dedupe)], OTHER_PROJECT, keys.otherExec);
    expect([enrolledA.type, enrolledB.type]).toEqual(['enrolled', 'enrolled']);
    const invoke = (project: string, key: string, body: Record<string, unknown>) => call(`${gw.url}/${project}/v1/exec/invocations`, { key, body });
    const slow = { workspace_id: WS_OTHER, tool_name: 'dedupe', arguments: { items: Array.from({ length: 30_000 }, (_, a) => ({ a })) } };
    const settled: string[] = [];
    const record = (name: string) => (res: JsonResponse) => {
      settled.push(`${name}:${res.status}`);
      return res;
    };
    const flood = Array.from({ length: 4 }, (_, i) => invoke(OTHER_PROJECT, keys.otherExec, slow).then(record(`B${i}`)));
    // B's arguments are being checked by the time A's arrive (a single queue would have them wait behind all four).
    await new Promise((r) => setTimeout(r, 300));
    const trivial = invoke(PROJECT, keys.exec, { workspace_id: WS_DEFAULT, tool_name: 'echo', arguments: { text: 'hi' } }).then(record('A'));
    const [a, ...b] = await Promise.all([trivial, ...flood]);
    expect(a.status).toBe(201);
    for (const res of b) {
      expectError(res, 400, 'invalid_body', 'arguments');
      expect((res.body as { error: { message: string } }).error.message).toBe('Checking arguments against the input_schema did not finish within 2000 ms; send smaller arguments.');
    }
    // A before any of B's refusals: A never waited for the thread B's arguments held.
    expect(settled[0]).toBe('A:201');
    agentA.ws.close();
    agentB.ws.close();
  });
});

describe('agent connections are rate-limited per key (issue 31 item 1)', () => {
  // Last in the file: it moves the gateway's clock a minute on, which would expire the agents above.
  it('refuses the connection past the limit with 429 rate_limit_exceeded and Retry-After; admits it again a window later', async () => {
    const joinKey = await mintJoinKey(gw.url, keys.exec);
    for (let i = 0; i < PER_KEY; i++) {
      const s = await openAgentSocket(connectUrl(), joinKey);
      expect(isRefused(s)).toBe(false);
      if (!isRefused(s)) s.ws.close();
    }
    const refused = await openAgentSocket(connectUrl(), joinKey);
    if (!isRefused(refused)) throw new Error('the connection past the limit was admitted');
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ code: 'rate_limit_exceeded', type: 'rate_limit_error' });
    expect(refused.body.error.message).toMatch(/This key's limit of 3 agent connections \(enrollments\) per 60 s is reached; retry in \d+ s\./);
    expect((refused.body.error as unknown as { retry_after: number }).retry_after).toBeGreaterThan(0);
    // Another key of the project is not held back by this one's.
    const other = await openAgentSocket(connectUrl(), await mintJoinKey(gw.url, keys.exec));
    expect(isRefused(other)).toBe(false);
    if (!isRefused(other)) other.ws.close();
    await advanceClock(gw.url, 61_000);
    const later = await openAgentSocket(connectUrl(), joinKey);
    expect(isRefused(later)).toBe(false);
    if (!isRefused(later)) later.ws.close();
  });
});
