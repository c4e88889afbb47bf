/**
 * The upstream client against real local HTTP servers: which failures it retries on another server of
 * the pool (a connection that could not be opened) and which it never retries (anything that may have
 * reached a model), and the one log line each failure gives the operator.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/errors.js';
import { createUpstreamClient, UPSTREAM_KEEP_ALIVE_MS, UpstreamAbort, type UpstreamClient, type UpstreamEndpoint, type UpstreamLogger } from '../../../src/upstream/upstream-client.js';

interface Line {
  readonly level: string;
  readonly fields: Record<string, unknown>;
  readonly msg: string;
}

function recorder(): { logger: UpstreamLogger; lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: string) => (fields: object, msg: string) => void lines.push({ level, fields: fields as Record<string, unknown>, msg });
  return { logger: { info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; url: string; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? '');
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, hits };
}

/** A port nothing listens on: connections to it are refused. */
async function refusedUrl(): Promise<string> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return `http://127.0.0.1:${port}/v1`;
}

function endpoint(servers: string[], threshold = 3): UpstreamEndpoint {
  return {
    id: `e-${servers.join('|')}-${threshold}`,
    slug: 'chat',
    projectId: 'proj_t',
    upstream: {
      base_url: servers[0] ?? '',
      model: 'm',
      api_key_env: undefined,
      servers: servers.map((base_url) => ({ base_url, api_key_env: undefined, weight: 1 })),
      health: { failure_threshold: threshold, cooldown_ms: 60_000 },
    },
  };
}

/** A call with `body`, by default a small JSON Buffer (the only body exchange() takes: its type keeps the Buffer). */
function call<B extends Buffer | Readable = Buffer>(body?: B) {
  return { path: '/chat/completions', body: body ?? Buffer.from('{"x":1}'), signal: new UpstreamAbort(), headersTimeoutMs: 5000, bodyTimeoutMs: 5000, requestId: 'req_1' };
}

describe('createUpstreamClient', () => {
  let live: Awaited<ReturnType<typeof listen>>;
  let dropping: Awaited<ReturnType<typeof listen>>;
  let refused: string;
  let client: UpstreamClient;
  let log: ReturnType<typeof recorder>;

  beforeAll(async () => {
    live = await listen((req, res) => {
      if (req.url?.endsWith('/denied')) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"message":"bad key"}}');
        return;
      }
      req.resume();
      req.on('end', () => res.end('{"ok":true}'));
    });
    // Reads the request, then drops the connection without a byte of answer: "reached the server".
    dropping = await listen((req) => {
      req.resume();
      req.on('end', () => req.socket.destroy());
    });
    refused = await refusedUrl();
  });
  afterAll(async () => {
    live.server.close();
    dropping.server.close();
  });
  afterEach(async () => {
    await client.close();
  });

  const make = (): UpstreamClient => {
    log = recorder();
    client = createUpstreamClient({ logger: log.logger, now: () => 0 });
    return client;
  };

  it('retries a refused connection once on another server of the pool, and logs one warn line naming the cause', async () => {
    make();
    const before = live.hits.length;
    const res = await client.exchange(endpoint([refused, live.url]), call());
    expect(res.statusCode).toBe(200);
    expect(live.hits.length - before).toBe(1);
    expect(log.lines).toHaveLength(1);
    expect(log.lines[0]).toMatchObject({ level: 'warn', fields: { endpoint: 'chat', project: 'proj_t', server: refused, retried_on: live.url, request_id: 'req_1' } });
    expect(log.lines[0]?.fields.cause).toBe(`ECONNREFUSED ${refused.replace('http://', '').replace('/v1', '')}`);
  });

  it('retries streamed (post) calls the same way', async () => {
    make();
    const res = await client.post(endpoint([refused, live.url]), call());
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('{"ok":true}');
  });

  it('never retries a request the server received: the connection closed after sending is a 500 saying so', async () => {
    make();
    const before = live.hits.length;
    const err = await client.exchange(endpoint([dropping.url, live.url]), call()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('internal_error');
    expect((err as GatewayError).message).toMatch(/closed before it answered.*not retried/);
    expect(live.hits.length).toBe(before);
    expect(log.lines).toEqual([expect.objectContaining({ level: 'error', msg: expect.stringMatching(/not retried/) })]);
    expect(log.lines[0]?.fields).toMatchObject({ server: dropping.url, cause: expect.stringMatching(/^(UND_ERR_SOCKET|ECONNRESET)/) });
  });

  it('does not retry a stream body: it was spent on the first attempt', async () => {
    make();
    const err = await client.post(endpoint([refused, live.url]), call(Readable.from([Buffer.from('{}')]))).catch((e: unknown) => e);
    expect((err as GatewayError).message).toMatch(/connection refused/);
    expect(log.lines.map((l) => l.level)).toEqual(['error']);
  });

  it('with one server, a refused connection is a 500 naming the refusal, logged as an error', async () => {
    make();
    const err = await client.exchange(endpoint([refused]), call()).catch((e: unknown) => e);
    expect((err as GatewayError).code).toBe('internal_error');
    expect((err as GatewayError).message).toMatch(/could not be reached \(connection refused\)/);
    expect(log.lines[0]).toMatchObject({ level: 'error', fields: { server: refused, cause: expect.stringMatching(/^ECONNREFUSED /) } });
  });

  it('takes a server out after repeated refusals: later requests go straight to the live one', async () => {
    make();
    const e = endpoint([refused, live.url], 2);
    for (let i = 0; i < 3; i += 1) expect((await client.exchange(e, call())).statusCode).toBe(200);
    expect(log.lines.filter((l) => l.msg.includes('taken out'))).toHaveLength(1);
    const lines = log.lines.length;
    for (let i = 0; i < 5; i += 1) expect((await client.exchange(e, call())).statusCode).toBe(200);
    expect(log.lines.length).toBe(lines);
    expect(client.report('proj_t')[0]?.servers.map((s) => [s.url, s.state])).toEqual([
      [refused, 'down'],
      [live.url, 'up'],
    ]);
    expect(client.healthy(e.id)).toBe(true);
  });

  it('fails fast with a 500 when every server is out', async () => {
    make();
    const e = endpoint([refused], 1);
    await client.exchange(e, call()).catch(() => undefined);
    expect(client.healthy(e.id)).toBe(false);
    const err = await client.exchange(e, call()).catch((x: unknown) => x);
    expect((err as GatewayError).message).toMatch(/No model server of this endpoint is taking requests/);
  });

  it('returns an error answer to the caller and logs it once with the URL that answered', async () => {
    make();
    const res = await client.exchange(endpoint([live.url]), { ...call(), path: '/denied' });
    expect(res.statusCode).toBe(401);
    expect(log.lines).toEqual([expect.objectContaining({ level: 'error', fields: expect.objectContaining({ cause: `HTTP 401 from ${live.url}/denied` }) })]);
  });

  it('rethrows an abort as it is, without counting it against the server', async () => {
    make();
    const c = call();
    c.signal.abort();
    const err = await client.exchange(endpoint([live.url], 1), c).catch((x: unknown) => x);
    expect(err).not.toBeInstanceOf(GatewayError);
    expect(client.report()[0]?.servers[0]).toMatchObject({ state: 'up', consecutive_failures: 0, outstanding: 0 });
  });

  it('releases a streamed request when its body closes', async () => {
    make();
    const e = endpoint([live.url]);
    const res = await client.post(e, call());
    expect(client.report()[0]?.servers[0]?.outstanding).toBe(1);
    await res.body.text();
    await new Promise((r) => setImmediate(r));
    expect(client.report()[0]?.servers[0]?.outstanding).toBe(0);
  });

  it('sends the key read at construction, not the environment of the moment', async () => {
    const seen: (string | undefined)[] = [];
    const keyed = await listen((req, res) => {
      seen.push(req.headers.authorization);
      req.resume();
      req.on('end', () => res.end('{}'));
    });
    const env: NodeJS.ProcessEnv = { SB_TEST_KEY: 'k1' };
    log = recorder();
    const e = { id: 'keyed', slug: 'keyed', upstream: { ...endpoint([keyed.url]).upstream, api_key_env: 'SB_TEST_KEY', servers: [{ base_url: keyed.url, api_key_env: 'SB_TEST_KEY', weight: 1 }] } };
    client = createUpstreamClient({ projects: [{ id: 'proj_k', endpoints: [e, { ...e, id: 'unset', slug: 'unset', upstream: { ...e.upstream, servers: [{ base_url: keyed.url, api_key_env: 'SB_UNSET', weight: 1 }] } }] }], env, logger: log.logger });
    expect(log.lines).toEqual([expect.objectContaining({ level: 'warn', fields: expect.objectContaining({ endpoint: 'unset', api_key_env: 'SB_UNSET' }) })]);
    env.SB_TEST_KEY = 'k2';
    await client.exchange({ ...e, projectId: 'proj_k' }, call());
    expect(seen).toEqual(['Bearer k1']);
    keyed.server.close();
  });
});

describe('UPSTREAM_KEEP_ALIVE_MS', () => {
  // Regression: at 30 s, a turn sent as the simulator (uWS, idle close after 10-14 s) closed a connection idle
  // that long was written to the closing socket and answered 500 "closed before it answered" (the flaky
  // routed turn of test/browser/dashboard-pages.test.ts). Measured on the simulator: closed after 11.8 s idle,
  // no Keep-Alive hint sent. Node's http server and uvicorn (vLLM) close after 5 s, also without one.
  it('forgets an idle connection before the usual model servers close it (5 s)', () => {
    expect(UPSTREAM_KEEP_ALIVE_MS).toBeLessThan(5_000);
    expect(UPSTREAM_KEEP_ALIVE_MS).toBeGreaterThanOrEqual(1_000);
  });
});
