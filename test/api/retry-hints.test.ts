/**
 * Retry hints over HTTP (issue 21): every error response says `x-should-retry`, and a request-rate 429
 * never asks for more than a minute. Clients retried what looked transient: a 501 three to eleven times,
 * a 408 for up to two minutes, each retry a new request and, past the router, a new billed turn; and the
 * first 429 of a window said Retry-After: 61, which the SDKs capped at 60 s would not honour.
 *
 * The project has a ceiling of 3 (free plan, 1 request per minute), and every test starts past every
 * window on the gateway's controllable clock.
 */
import OpenAI, { APIError } from 'openai';
import { beforeEach, describe, expect, it } from 'vitest';
import { FREE_TIER_TIMEOUTS, PROJECT, testConfig } from '../helpers/configs.js';
import { advanceClock, call, errorOf, expectError, type JsonResponse } from '../helpers/http.js';
import { mintTestKey, startGatewayProcess } from '../helpers/processes.js';
import { openRaw, readResponse, requestHead } from '../helpers/raw-http.js';
import { simSeq, waitForSim } from '../helpers/simulator-log.js';
import { useGatewaySuite } from '../helpers/suite.js';

/** A key with the execution scope besides inference. */
const execKey = mintTestKey('test');
const CEILING = 3;

const suite = useGatewaySuite({
  plan: 'free',
  rateLimit: { requests_per_minute: 1 },
  extraKeys: [{ value: execKey, scopes: ['inference', 'execution'] }],
});

const models = (): string => `${suite.gw.url}/${PROJECT}/v1/models`;
/** The multimodel route (issue 16; it answered 501 before it landed). */
const multimodel = (): string => `${suite.gw.url}/${PROJECT}/_semantic/router/v1/chat/completions/multimodel`;

beforeEach(async () => {
  await advanceClock(suite.gw.url, 61_000);
});

function shouldRetry(res: JsonResponse): string | null {
  return res.headers.get('x-should-retry');
}

describe('x-should-retry: false where a retry cannot help', () => {
  it('says false on a 401: the key will not become valid', async () => {
    const res = await call(models(), { key: `svc_test_${'A'.repeat(43)}` });
    expectError(res, 401, 'invalid_api_key');
    expect(shouldRetry(res)).toBe('false');
  });

  it('says false on the 404 of an unknown route, answered before any handler runs', async () => {
    const res = await call(`${suite.gw.url}/${PROJECT}/v1/no-such-thing`);
    expectError(res, 404, 'not_found');
    expect(shouldRetry(res)).toBe('false');
  });

  it('says false on the early 405 of a known path with the wrong method', async () => {
    const res = await call(models(), { method: 'DELETE' });
    expectError(res, 405, 'method_not_allowed');
    expect(shouldRetry(res)).toBe('false');
  });

  it('says false on a 413: the same body is as large next time', async () => {
    const res = await call(`${suite.gw.url}/${PROJECT}/v1/management/api-keys`, { key: suite.keys.full, body: { name: 'x'.repeat(20_000) } });
    expectError(res, 413, 'payload_too_large');
    expect(shouldRetry(res)).toBe('false');
  });

  it('says false on a 400 of an invalid body: the same body is as invalid next time', async () => {
    const res = await call(multimodel(), { key: execKey, body: {} });
    expect(res.status).toBe(400);
    expect(shouldRetry(res)).toBe('false');
  });

  it('says false on the 408 of a non-streaming turn over its tier deadline: a retry is a new billed turn', async () => {
    const res = await call(`${suite.gw.url}/${PROJECT}/slow/v1/chat/completions`, {
      key: suite.keys.full,
      body: { model: 'm', messages: [{ role: 'user', content: 'x' }], sim: { first_token_delay_ms: FREE_TIER_TIMEOUTS.request_ms + 2000 } },
    });
    expectError(res, 408, 'timeout');
    expect(shouldRetry(res)).toBe('false');
  });
});

describe('the 429 of the request window', () => {
  it('says true, with Retry-After of at most 60 equal to retry_after and RateLimit-Reset', async () => {
    for (let i = 0; i < CEILING; i++) expect((await call(models(), { key: suite.keys.full })).status).toBe(200);
    const refused = await call(models(), { key: suite.keys.full });
    expect(refused.status).toBe(429);
    expect(errorOf(refused).code).toBe('rate_limit_exceeded');
    expect(shouldRetry(refused)).toBe('true');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(errorOf(refused).retry_after).toBe(retryAfter);
    expect(refused.headers.get('ratelimit-reset')).toBe(String(retryAfter));
  });

  it('admits the next request once Retry-After has passed', async () => {
    for (let i = 0; i < CEILING; i++) await call(models(), { key: suite.keys.full });
    const refused = await call(models(), { key: suite.keys.full });
    const retryAfter = Number(refused.headers.get('retry-after'));
    await advanceClock(suite.gw.url, retryAfter * 1000);
    expect((await call(models(), { key: suite.keys.full })).status).toBe(200);
  });
});

describe('the official openai SDK', () => {
  /** A client whose every HTTP request goes through a counter: retries are new fetch calls. */
  function countingClient(baseURL: string, apiKey: string): { client: OpenAI; requests: () => number } {
    let n = 0;
    const client = new OpenAI({
      baseURL,
      apiKey,
      maxRetries: 2,
      fetch: (input, init) => {
        n += 1;
        return fetch(input, init);
      },
    });
    return { client, requests: () => n };
  }

  it('sends a refused request exactly once with maxRetries: 2', async () => {
    const { client, requests } = countingClient(`${suite.gw.url}/${PROJECT}/_semantic/router/v1`, execKey);
    const failure = await client.post('/chat/completions/multimodel', { body: {} }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(APIError);
    expect((failure as APIError).status).toBe(400);
    expect(requests()).toBe(1);
  });

  it('still retries what says true: an upstream failure (500 internal_error) is sent 1 + 2 times', async () => {
    const { client, requests } = countingClient(`${suite.gw.url}/${PROJECT}/chat/v1`, suite.keys.full);
    const failure = await client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'x' }], ...({ sim: { error_status: 500 } } as object) })
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect((failure as APIError).status).toBe(500);
    expect(requests()).toBe(3);
  });
});

describe('a draining gateway', () => {
  it('says true on its 503 service_draining: another replica, or this one restarted, will answer', async () => {
    const gw = await startGatewayProcess(testConfig(suite.sim.url, suite.keys));
    try {
      // A stream in flight keeps the gateway draining; a second connection, opened before the signal,
      // can still carry a request, which the drain refuses.
      const before = await simSeq(suite.sim.url);
      const busy = await openRaw(gw.url);
      const body = JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'drain-hint' }], sim: { tokens: 40, delay_ms: 50 } });
      await busy.write(requestHead('POST', `/${PROJECT}/chat/v1/chat/completions`, { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }) + body);
      await waitForSim(suite.sim.url, (r) => r.seq > before && r.body.includes('drain-hint'));
      const idle = await openRaw(gw.url);

      const exited = gw.stop('SIGTERM');
      await waitFor(() => gw.stdout.join('').includes('"msg":"draining"'));
      await idle.write(requestHead('GET', `/${PROJECT}/v1/models`, { authorization: `Bearer ${suite.keys.full}` }));
      const res = await readResponse(idle);
      expect(res.status).toBe(503);
      expect((JSON.parse(res.body) as { error: { code: string } }).error.code).toBe('service_draining');
      expect(res.headers['x-should-retry']).toBe('true');
      idle.socket.destroy();
      busy.socket.destroy();
      await exited;
    } finally {
      await gw.stop();
    }
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
