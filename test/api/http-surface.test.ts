import { describe, expect, it } from 'vitest';
import { PROJECT } from '../helpers/configs.js';
import { useGatewaySuite } from '../helpers/suite.js';
import { call, expectError } from '../helpers/http.js';

const suite = useGatewaySuite({ server: { max_body_bytes: 4096 } });

describe('routing errors', () => {
  it('answers an unknown path with 404 not_found in the envelope', async () => {
    expectError(await call(`${suite.gw.url}/nothing/here`), 404, 'not_found');
  });

  it('answers a wrong method with 405 method_not_allowed and an Allow header', async () => {
    const res = await call(`${suite.gw.url}/${PROJECT}/v1/endpoints`, { method: 'DELETE', key: suite.keys.full });
    expectError(res, 405, 'method_not_allowed');
    expect(res.headers.get('allow')).toBe('GET');
  });

  it('authenticates a routed family before reading its body', async () => {
    const url = `${suite.gw.url}/${PROJECT}/_semantic/router/v1/chat/completions/multimodel`;
    expectError(await call(url, { method: 'POST', body: {} }), 401, 'authentication_required');
    expect((await call(url, { method: 'POST', key: suite.keys.full, body: {} })).status).toBe(400);
  });
});

describe('request bodies', () => {
  it('refuses a body over the cap with 413 payload_too_large', async () => {
    const res = await call(`${suite.gw.url}/${PROJECT}/chat/v1/chat/completions`, { key: suite.keys.full, body: 'x'.repeat(10_000) });
    expectError(res, 413, 'payload_too_large');
  });

  it('refuses a chunked body that grows past the cap with 413', async () => {
    const big = new TextEncoder().encode('y'.repeat(10_000));
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(big.subarray(0, 5000));
        c.enqueue(big.subarray(5000));
        c.close();
      },
    });
    const res = await fetch(`${suite.gw.url}/${PROJECT}/chat/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${suite.keys.full}` },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
  });

  it('keeps serving after a refused body', async () => {
    expect((await call(`${suite.gw.url}/healthz`)).status).toBe(200);
  });
});

describe('request ids', () => {
  it('puts X-Request-ID on every response, chatcmpl- style on chat routes', async () => {
    const ok = await call(`${suite.gw.url}/${PROJECT}/v1/models`, { key: suite.keys.full });
    expect(ok.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{24}$/);
    const chat = await call(`${suite.gw.url}/${PROJECT}/chat/v1/chat/completions`, { key: suite.keys.full, body: {} });
    expect(chat.headers.get('x-request-id')).toMatch(/^chatcmpl-[0-9a-f]{24}$/);
    const a = await call(`${suite.gw.url}/healthz`);
    const b = await call(`${suite.gw.url}/healthz`);
    expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
  });
});

describe('worker id', () => {
  // SPEC Response headers: X-Service-Worker-ID on every response; one process, one stable id.
  it('puts the same X-Service-Worker-ID on success, error, streamed and unauthenticated responses', async () => {
    const chatUrl = `${suite.gw.url}/${PROJECT}/chat/v1/chat/completions`;
    const messages = [{ role: 'user', content: 'hi' }];
    const ok = await call(`${suite.gw.url}/${PROJECT}/v1/models`, { key: suite.keys.full });
    const missing = await call(`${suite.gw.url}/nothing/here`);
    const unauthenticated = await call(chatUrl, { body: {} });
    const invalid = await call(chatUrl, { key: suite.keys.full, body: {} });
    const streamed = await fetch(chatUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'client-model', messages, stream: true }),
    });
    expect(streamed.status).toBe(200);
    await streamed.text();
    const ids = [ok, missing, unauthenticated, invalid].map((r) => r.headers.get('x-service-worker-id'));
    ids.push(streamed.headers.get('x-service-worker-id'));
    expect(ids[0]).toMatch(/^inst_[0-9a-f]{16}$/);
    expect(new Set(ids)).toEqual(new Set([ids[0]]));
  });
});

describe('operations routes', () => {
  it('reports liveness and readiness without a key', async () => {
    expect((await call(`${suite.gw.url}/healthz`)).body).toEqual({ status: 'ok' });
    const ready = await call(`${suite.gw.url}/readyz`);
    expect(ready.status).toBe(200);
    // The public answer: the status and its checks; the upstream servers are for the scrape token's holder
    // (test/reliability/hostile-callers-http.test.ts).
    expect(ready.body).toEqual({ status: 'ready', checks: { store: true, pool: true } });
  });

  it('serves Prometheus metrics with request counts, latency, in-flight, pool depth and event-loop delay', async () => {
    await call(`${suite.gw.url}/${PROJECT}/v1/models`, { key: suite.keys.full });
    const res = await call(`${suite.gw.url}/metrics`);
    const text = String(res.body);
    expect(text).toMatch(/switchboard_requests_total\{family="models",status="200"\} \d+/);
    expect(text).toContain('switchboard_request_duration_seconds_bucket');
    expect(text).toContain('switchboard_requests_in_flight');
    expect(text).toContain('switchboard_pool_queue_depth');
    expect(text).toContain('nodejs_eventloop_lag_seconds');
  });
});

describe('request log', () => {
  it('writes one JSON line per request with id, project, family, status and latency, never the key', async () => {
    const res = await call(`${suite.gw.url}/${PROJECT}/v1/endpoints`, { key: suite.keys.full });
    const id = res.headers.get('x-request-id') ?? '';
    const line = await waitForLogLine(id);
    expect(line).toMatchObject({ request_id: id, project: PROJECT, family: 'endpoints', status: 200, msg: 'request' });
    expect(typeof line.latency_ms).toBe('number');
    expect(suite.gw.stdout.join('')).not.toContain(suite.keys.full);
  });
});

async function waitForLogLine(requestId: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 100; i++) {
    const line = suite.gw.stdout.join('').split('\n').find((l) => l.includes(`"request_id":"${requestId}"`));
    if (line) return JSON.parse(line) as Record<string, unknown>;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no log line for ${requestId}`);
}

describe('the testing clock route', () => {
  it('refuses a body that is not {advance_ms: <non-negative integer>} with 400 invalid_body', async () => {
    expectError(await call(`${suite.gw.url}/__test/clock`, { body: { advance_ms: -5 } }), 400, 'invalid_body', 'advance_ms');
  });
});
