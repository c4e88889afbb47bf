/**
 * `serve --workers 2` is one deployment with one truth (issue 32 item 2): whichever worker a connection
 * lands on, /metrics counts the whole process, an MCP session initialized on one worker keeps working, and
 * an agent connected to one worker runs the invocations created through either. Every request below is on
 * a connection of its own (`connection: close`), so the kernel spreads them over both workers; each check
 * goes on until both workers have answered it several times (the X-Service-Worker-ID header says which).
 * Before the fix a scrape saw one worker's counters, a session was 404 on the other worker, and an
 * invocation created on the agent-less worker was 404 exec_tool_not_found.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, execConfig, makeExecKeys, mintJoinKey, PROJECT, WS_DEFAULT, type ExecKeys } from '../helpers/exec-config.js';
import { connectTestAgent, echoTool, type TestAgent } from '../helpers/exec-test-agent.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/processes.js';

let gw: GatewayProcess;
let keys: ExecKeys;
let agent: TestAgent;

beforeAll(async () => {
  keys = makeExecKeys();
  const config = execConfig(keys);
  // /metrics on a listener of its own, which the workers share as they share the main one.
  const { server } = config as typeof config & { server: Record<string, unknown> };
  gw = await startGatewayProcess({ ...config, server: { ...server, metrics: { port: 0 } } }, { extraArgs: ['--workers', '2'] });
  agent = await connectTestAgent(gw.url, PROJECT, await mintJoinKey(gw.url, keys.exec), { name: 'one-truth', tools: [echoTool] });
  agent.onDispatch((d) => agent.result(d.invocation_id, 0, { output: `echo ${String(d.arguments.text)}` }));
});

afterAll(async () => {
  await agent?.close();
  await gw?.stop();
});

interface Answer {
  readonly status: number;
  readonly worker: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** One request on a new connection, closed after it (to the main listener, unless `base` names another). */
function send(path: string, options: { key?: string; method?: string; body?: object; headers?: Record<string, string>; base?: string } = {}): Promise<Answer> {
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, options.base ?? gw.url),
      {
        method: options.method ?? (payload ? 'POST' : 'GET'),
        agent: false,
        headers: {
          connection: 'close',
          ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
          ...(payload ? { 'content-type': 'application/json' } : {}),
          ...options.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, worker: String(res.headers['x-service-worker-id'] ?? ''), headers: res.headers, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** Calls `attempt` until each of the two workers has answered at least `each` times (at most 60 attempts). */
async function onBothWorkers(each: number, attempt: (i: number) => Promise<Answer>): Promise<Answer[]> {
  const answers: Answer[] = [];
  const served = new Map<string, number>();
  for (let i = 0; i < 60 && !(served.size === 2 && [...served.values()].every((n) => n >= each)); i++) {
    const a = await attempt(i);
    answers.push(a);
    served.set(a.worker, (served.get(a.worker) ?? 0) + 1);
  }
  expect(served.size, 'both workers answered').toBe(2);
  return answers;
}

describe('serve --workers 2: /metrics', () => {
  it('counts every request of the process at every scrape, whichever worker answers it', async () => {
    const requests = await Promise.all(Array.from({ length: 20 }, () => send(`/${PROJECT}/v1/models`, { key: keys.full })));
    for (const r of requests) expect(r.status, r.body).toBe(200);
    expect(new Set(requests.map((r) => r.worker)).size).toBe(2);
    const listening = gw.stdout.join('').split('\n').filter((l) => l.includes('"msg":"metrics listening"'));
    const metricsUrls = new Set(listening.map((l) => (JSON.parse(l) as { url: string }).url));
    expect(listening).toHaveLength(2);
    expect(metricsUrls.size, 'one metrics port for both workers').toBe(1);
    const scrapes = await onBothWorkers(5, () => send('/metrics', { base: [...metricsUrls][0] }));
    for (const s of scrapes) {
      expect(s.status).toBe(200);
      expect(s.body).toMatch(/^switchboard_requests_total\{family="models",status="200"\} 20$/m);
      expect(s.body).toMatch(/^switchboard_metrics_workers_missing 0$/m);
      // The one process's start time, once (cluster aggregation would omit it; summing would double it).
      expect(s.body.match(/^process_start_time_seconds \d+/gm)).toHaveLength(1);
    }
  });
});

const mcpPath = `/${PROJECT}/v1/mcp`;
const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'x-service-workspace': WS_DEFAULT };

/** The JSON-RPC message of an MCP POST's answer (one SSE `data:` line, or a JSON body). */
function rpcOf(a: Answer): { result?: { isError?: boolean; content?: { type: string; text: string }[]; tools?: { name: string }[] }; error?: unknown } {
  const data = a.body.split('\n').find((l) => l.startsWith('data: '));
  return JSON.parse(data === undefined ? a.body : data.slice('data: '.length)) as ReturnType<typeof rpcOf>;
}

describe('serve --workers 2: an MCP session', () => {
  it('keeps working on new connections to either worker, runs the agent tool there, and ends on both', async () => {
    const init = await send(mcpPath, {
      key: keys.execOnly,
      headers: MCP_HEADERS,
      body: { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'one-truth', version: '1.0.0' } } },
    });
    expect(init.status, init.body).toBe(200);
    const session = String(init.headers['mcp-session-id']);
    const inSession = { ...MCP_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
    const notified = await send(mcpPath, { key: keys.execOnly, headers: inSession, body: { jsonrpc: '2.0', method: 'notifications/initialized' } });
    expect(notified.status, notified.body).toBe(202);

    const calls = await onBothWorkers(3, (i) =>
      send(mcpPath, { key: keys.execOnly, headers: inSession, body: { jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'echo', arguments: { text: `call ${i}` } } } }),
    );
    calls.forEach((c, i) => {
      expect(c.status, c.body).toBe(200);
      const rpc = rpcOf(c);
      expect(rpc.error, c.body).toBeUndefined();
      expect(rpc.result?.isError, c.body).toBeFalsy();
      expect(rpc.result?.content?.[0]?.text).toBe(`echo call ${i}`);
    });
    // Another key never reaches the session, on either worker.
    const foreign = await onBothWorkers(1, () => send(mcpPath, { key: keys.exec, headers: inSession, body: { jsonrpc: '2.0', id: 99, method: 'tools/list' } }));
    for (const f of foreign) expect(f.status, f.body).toBe(404);

    const ended = await send(mcpPath, { key: keys.execOnly, method: 'DELETE', headers: inSession });
    expect(ended.status, ended.body).toBe(200);
    const after = await onBothWorkers(2, () => send(mcpPath, { key: keys.execOnly, headers: inSession, body: { jsonrpc: '2.0', id: 100, method: 'tools/list' } }));
    for (const a of after) expect(a.status, a.body).toBe(404);
  });
});

describe('serve --workers 2: an execution agent', () => {
  it('runs the invocations created through either worker, and both workers read their results', async () => {
    const created = await onBothWorkers(3, (i) =>
      send(`/${PROJECT}/v1/exec/invocations`, { key: keys.exec, body: { workspace_id: WS_DEFAULT, tool_name: 'echo', arguments: { text: `rest ${i}` } } }),
    );
    for (const c of created) expect(c.status, c.body).toBe(201);
    const ids = created.map((c) => (JSON.parse(c.body) as { id: string }).id);
    for (const [i, id] of ids.entries()) {
      await eventually(async () => {
        const read = await send(`/${PROJECT}/v1/exec/invocations/${id}`, { key: keys.exec });
        const inv = JSON.parse(read.body) as { status: string; output: string };
        return inv.status === 'completed' && inv.output === `echo rest ${i}`;
      }, `${id} completed`);
    }
  });
});
