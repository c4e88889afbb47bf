/**
 * What an operator sees of traffic: the access log line and /metrics. Fields operators search by (key id,
 * model, tokens, client address, error code, the path of an unmatched request) must be on the line.
 */
import { describe, expect, it } from 'vitest';
import { PROJECT, testConfig } from '../helpers/configs.js';
import { runCli, startGatewayProcess, tempDir, writeConfig } from '../helpers/processes.js';
import { useGatewaySuite } from '../helpers/suite.js';

const suite = useGatewaySuite();

type LogLine = Record<string, unknown>;

/** The request line for `requestId`, polled for: logs are flushed every 250 ms. */
async function logLineFor(requestId: string): Promise<LogLine> {
  for (let i = 0; i < 100; i++) {
    const line = suite.gw.stdout
      .join('')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as LogLine)
      .find((l) => l.msg === 'request' && l.request_id === requestId);
    if (line) return line;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no request log line for ${requestId}; stderr: ${suite.gw.stderr.join("")}; stdout tail: ${suite.gw.stdout.join("").slice(-1500)}`);
}

const chatUrl = (): string => `${suite.gw.url}/${PROJECT}/chat/v1/chat/completions`;

function post(url: string, key: string, body: unknown): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

describe('the access log line', () => {
  it('carries key id, model, tokens and client address for a served turn', async () => {
    const res = await post(chatUrl(), suite.keys.full, { model: 'm', messages: [{ role: 'user', content: 'hello there' }] });
    expect(res.status).toBe(200);
    const usage = ((await res.json()) as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
    const line = await logLineFor(res.headers.get('x-request-id') ?? '');
    expect(line).toMatchObject({ status: 200, project: PROJECT, endpoint: 'chat', client_ip: '127.0.0.1', prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens });
    expect(line.key_id).toEqual(expect.any(String));
    expect(line.model).toEqual(expect.any(String));
    expect(JSON.stringify(line)).not.toContain(suite.keys.full);
  });

  it('is written once per request, whole, with id, route, project, endpoint, status, upstream and total ms and tokens', async () => {
    // Concurrent, so that several requests finish in one event-loop turn and share one write.
    const answers = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const res = await post(chatUrl(), suite.keys.full, { model: 'm', messages: [{ role: 'user', content: `line ${i}` }] });
        await res.text();
        return res;
      }),
    );
    const ids = answers.map((res) => res.headers.get('x-request-id') ?? '');
    for (const id of ids) await logLineFor(id);
    // Only complete lines: the last piece read from the pipe may still be arriving.
    const complete = suite.gw.stdout.join('').split('\n').slice(0, -1);
    const parsed = complete.map((l) => JSON.parse(l) as LogLine);
    for (const id of ids) {
      const mine = parsed.filter((l) => l.msg === 'request' && l.request_id === id);
      expect(mine).toHaveLength(1);
      expect(mine[0]).toMatchObject({ level: 30, service: 'switchboard', method: 'POST', family: 'chat', project: PROJECT, endpoint: 'chat', status: 200 });
      expect(mine[0]).toMatchObject({ upstream_ms: expect.any(Number), latency_ms: expect.any(Number), prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) });
      expect(Date.parse(String(mine[0]?.time))).not.toBeNaN();
    }
  });

  it('carries the time to first token of a stream', async () => {
    const res = await post(chatUrl(), suite.keys.full, { model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    await res.text();
    const line = await logLineFor(res.headers.get('x-request-id') ?? '');
    expect(line.ttft_ms).toEqual(expect.any(Number));
  });

  it('carries the error code of a refusal and the path of an unmatched request', async () => {
    const refused = await post(chatUrl(), suite.keys.full, { model: 'm', messages: [], max_tokens: 0 });
    expect(refused.status).toBe(400);
    const code = ((await refused.json()) as { error: { code: string } }).error.code;
    expect(await logLineFor(refused.headers.get('x-request-id') ?? '')).toMatchObject({ status: 400, error_code: code });

    const lost = await fetch(`${suite.gw.url}/${PROJECT}/chat/chat/completions`, { method: 'POST' });
    expect(lost.status).toBe(404);
    expect(await logLineFor(lost.headers.get('x-request-id') ?? '')).toMatchObject({ status: 404, path: `/${PROJECT}/chat/chat/completions`, error_code: 'not_found' });
  });
});

describe('/metrics', () => {
  it('counts requests and tokens per endpoint and model', async () => {
    await (await post(chatUrl(), suite.keys.full, { model: 'm', messages: [{ role: 'user', content: 'count me' }] })).text();
    const text = await (await fetch(`${suite.gw.url}/metrics`)).text();
    expect(text).toMatch(new RegExp(`switchboard_endpoint_requests_total\\{project="${PROJECT}",endpoint="chat",model="[^"]+",status="200"\\} \\d+`));
    expect(text).toMatch(new RegExp(`switchboard_tokens_total\\{project="${PROJECT}",endpoint="chat",model="[^"]+",kind="prompt"\\} \\d+`));
  });
});

describe('/metrics on a listener of its own, behind a token', () => {
  it('serves /metrics only on its own port, only with the token, and not on the main port', async () => {
    const gw = await startGatewayProcess(testConfig(suite.sim.url, suite.keys, { server: { metrics: { port: 0, token_env: 'SCRAPE_TOKEN' } } }), { env: { SCRAPE_TOKEN: 'scrape-secret' } });
    try {
      const url = /"url":"([^"]+\/metrics)","msg":"metrics listening"/.exec(gw.stdout.join(''))?.[1] ?? '';
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      expect((await fetch(url)).status).toBe(401);
      expect((await fetch(url, { headers: { authorization: 'Bearer wrong-secret' } })).status).toBe(401);
      const ok = await fetch(url, { headers: { authorization: 'Bearer scrape-secret' } });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('switchboard_requests_total');
      expect((await fetch(`${gw.url}/metrics`)).status).toBe(404);
      expect(gw.stdout.join('')).not.toContain('scrape-secret');
    } finally {
      await gw.stop();
    }
  });

  it('refuses to start when the token variable is not set', async () => {
    const dir = tempDir();
    const res = await runCli(['serve', '--config', writeConfig(dir, testConfig(suite.sim.url, suite.keys, { server: { metrics: { token_env: 'UNSET_SCRAPE_TOKEN_X' } } })), '--port', '0', '--db', `${dir}/s.db`]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('UNSET_SCRAPE_TOKEN_X');
  });
});

describe('upstream failures in /metrics', () => {
  it('counts them per endpoint by cause', async () => {
    const down = await startGatewayProcess(testConfig('http://127.0.0.1:9/v1', suite.keys));
    try {
      const res = await post(`${down.url}/${PROJECT}/chat/v1/chat/completions`, suite.keys.full, { model: 'm', messages: [{ role: 'user', content: 'x' }] });
      expect(res.status).toBe(500);
      const text = await (await fetch(`${down.url}/metrics`)).text();
      expect(text).toMatch(new RegExp(`switchboard_upstream_errors_total\\{project="${PROJECT}",endpoint="chat",cause="(unreachable|no_server)"\\} \\d+`));
    } finally {
      await down.stop();
    }
  });
});
