/**
 * `serve --workers 2` (issue 12) as operators run it: one process, two gateway threads on one port, the
 * bundled simulator upstream. Which worker served a request is read from its access-log line (`worker`,
 * matched by the X-Request-ID the response carries); the X-Service-Worker-ID header must agree with it.
 */
import { Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';

let sim: SimulatorProcess;
let gw: GatewayProcess;
let keys: TestKeys;
/** requests_per_minute 67 -> ceiling 67 + 33 = 100 (SPEC Limits 2), counted across both workers. */
const CEILING = 100;

beforeAll(async () => {
  keys = makeKeys();
  sim = await startSimulatorProcess();
  gw = await startGatewayProcess(testConfig(sim.url, keys, { rateLimit: { requests_per_minute: 67 }, limits: { management_requests_per_minute: 100_000 } }), {
    extraArgs: ['--workers', '2'],
  });
});

afterAll(async () => {
  await gw?.stop();
  await sim?.stop();
});

interface Answer {
  readonly status: number;
  readonly requestId: string;
  readonly workerId: string;
  readonly body: string;
}

/** One request on `agent`'s connection (keep-alive, one socket), or on a connection of its own. */
function send(path: string, options: { key: string; method?: string; body?: object; agent?: Agent }): Promise<Answer> {
  const url = new URL(path, gw.url);
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? (payload ? 'POST' : 'GET'),
        agent: options.agent ?? false,
        headers: { authorization: `Bearer ${options.key}`, ...(payload ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, requestId: String(res.headers['x-request-id'] ?? ''), workerId: String(res.headers['x-service-worker-id'] ?? ''), body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** The `worker` of each request's access-log line, by request id, once every id has a line (logs flush every 250 ms). */
async function workersOf(requestIds: readonly string[]): Promise<Map<string, number>> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const found = new Map<string, number>();
    for (const line of gw.stdout.join('').split('\n')) {
      if (!line.includes('"msg":"request"')) continue;
      const entry = JSON.parse(line) as { request_id?: string; worker?: number };
      if (entry.request_id !== undefined && entry.worker !== undefined) found.set(entry.request_id, entry.worker);
    }
    if (requestIds.every((id) => found.has(id)) || Date.now() > deadline) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const chat = (): string => `/${PROJECT}/chat/v1/chat/completions`;
const models = `/${PROJECT}/v1/models`;
const keysPath = `/${PROJECT}/v1/management/api-keys`;

describe('serve --workers 2', () => {
  it('logs one listening line for the launch, with workers: 2', () => {
    const lines = gw.stdout.join('').split('\n').filter((l) => l.includes('"msg":"switchboard listening"'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] as string)).toMatchObject({ workers: 2, url: gw.url });
  });

  it('answers chat completions on one port from both workers', async () => {
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) => send(chat(), { key: keys.full, body: { model: 'client-model', messages: [{ role: 'user', content: `hello ${i}` }] } })),
    );
    for (const a of answers) expect(a.status, a.body).toBe(200);
    expect((JSON.parse(answers[0]?.body ?? '{}') as { object?: string }).object).toBe('chat.completion');
    const served = await workersOf(answers.map((a) => a.requestId));
    expect(new Set(served.values())).toEqual(new Set([0, 1]));
    // X-Service-Worker-ID (SPEC Response headers): one stable id per worker, two workers, two ids.
    const idOf = new Map<number, Set<string>>();
    for (const a of answers) {
      const worker = served.get(a.requestId) as number;
      idOf.set(worker, (idOf.get(worker) ?? new Set()).add(a.workerId));
    }
    const [w0, w1] = [[...(idOf.get(0) ?? [])], [...(idOf.get(1) ?? [])]];
    expect(w0).toHaveLength(1);
    expect(w1).toHaveLength(1);
    expect(w0[0]).toMatch(/^inst_[0-9a-f]{16}$/);
    expect(w1[0]).toMatch(/^inst_[0-9a-f]{16}$/);
    expect(w0[0]).not.toBe(w1[0]);
  });

  it('admits exactly the project ceiling across both workers under concurrent load', async () => {
    // The previous test spent some of the window: spend what is left, on connections of their own.
    const answers = await Promise.all(Array.from({ length: 3 * CEILING }, () => send(models, { key: keys.inferenceOnly })));
    const admitted = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    expect(admitted.length + refused.length).toBe(3 * CEILING);
    expect(admitted.length).toBe(CEILING - 24);
    const served = await workersOf(admitted.map((a) => a.requestId));
    expect(new Set(served.values())).toEqual(new Set([0, 1]));
  });
});

describe('serve --workers 2: a key revoked on one worker', () => {
  it('is refused on the other worker within 1.5 s', async () => {
    // Management requests are another counter (raised above); the project's inference window is spent.
    const created = await send(keysPath, { key: keys.full, body: { scopes: ['management'] } });
    expect(created.status, created.body).toBe(201);
    const { id, value } = JSON.parse(created.body) as { id: string; value: string };
    // Keep-alive connections of one socket each until one is on worker 0 and one on worker 1.
    const agents = Array.from({ length: 12 }, () => new Agent({ keepAlive: true, maxSockets: 1 }));
    try {
      const probes = await Promise.all(agents.map((agent) => send(keysPath, { key: value, agent })));
      for (const p of probes) expect(p.status, p.body).toBe(200);
      const served = await workersOf(probes.map((p) => p.requestId));
      const on = (worker: number): Agent | undefined => agents[probes.findIndex((p) => served.get(p.requestId) === worker)];
      const [revoker, other] = [on(0), on(1)];
      if (!revoker || !other) throw new Error('no connection landed on one of the workers');
      const revoked = await send(`${keysPath}/${id}`, { key: keys.full, method: 'DELETE', agent: revoker });
      expect(revoked.status, revoked.body).toBe(200);
      const at = Date.now();
      let status = 0;
      while (Date.now() - at < 1500) {
        status = (await send(keysPath, { key: value, agent: other })).status;
        if (status === 401) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(status).toBe(401);
    } finally {
      for (const agent of agents) agent.destroy();
    }
  });
});

describe('serve --workers 2: SIGTERM', () => {
  it('drains every worker and exits 0', async () => {
    const code = await gw.stop('SIGTERM');
    expect(code).toBe(0);
    const out = gw.stdout.join('');
    expect(out.match(/"msg":"draining"/g)?.length).toBe(2);
    expect(out).toMatch(/"msg":"stopped"(?![\s\S]*"worker")/);
  });
});
