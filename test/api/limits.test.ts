/**
 * SPEC "Limits" over HTTP: the project's sliding request window with its burst ceiling, the RateLimit
 * header set on every response, 429 shapes, key quotas, the separate management and file counters, the
 * token limiter, unmetered limits. Time moves with the gateway's controllable clock, never with sleeps:
 * each test starts by moving past every window, so it sees empty counters. The clock is frozen, so how
 * long a loaded machine takes to send 100 requests never shows in a Retry-After or a window edge.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { advanceClock, call, errorOf, expectError, type JsonResponse } from '../helpers/http.js';
import { mintTestKey, startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';

let sim: SimulatorProcess;
let gw: GatewayProcess;
let keys: TestKeys;
/** quota_requests 5 per 10 s. */
const quotaKey = mintTestKey('test');

/** requests_per_minute 67 -> ceiling 67 + 33 = 100. */
const CEILING = 100;

beforeAll(async () => {
  keys = makeKeys();
  sim = await startSimulatorProcess();
  gw = await startGatewayProcess(
    testConfig(sim.url, keys, {
      rateLimit: { requests_per_minute: 67 },
      extraKeys: [{ value: quotaKey, scopes: ['inference', 'management'], quota_requests: 5, quota_window: 10 }],
    }),
  );
});

afterAll(async () => {
  await gw?.stop();
  await sim?.stop();
});

/** Past every window (60 s plus one 100 ms bucket), on a stopped clock: each test starts with empty counters. */
beforeEach(async () => {
  await advanceClock(gw.url, 61_000, true);
});

const models = (): string => `${gw.url}/${PROJECT}/v1/models`;
const mgmt = (): string => `${gw.url}/${PROJECT}/v1/management/api-keys`;

function limitHeaders(res: JsonResponse): Record<string, string | null> {
  const h = (name: string): string | null => res.headers.get(name);
  return {
    limit: h('ratelimit-limit'),
    remaining: h('ratelimit-remaining'),
    reset: h('ratelimit-reset'),
    warning: h('x-ratelimit-warning'),
  };
}

/** Sends `n` requests one after another; returns the last response. */
async function spend(n: number, url = models(), key = keys.full): Promise<JsonResponse> {
  let last: JsonResponse | undefined;
  for (let i = 0; i < n; i++) last = await call(url, { key });
  if (!last) throw new Error('spend(0)');
  return last;
}

function expectRateLimited(res: JsonResponse, code = 'rate_limit_exceeded'): number {
  expectErrorWithExtras(res, 429, code);
  const error = errorOf(res);
  expect(Number.isInteger(error.retry_after)).toBe(true);
  expect(error.retry_after).toBeGreaterThan(0);
  expect(res.headers.get('retry-after')).toBe(String(error.retry_after));
  const strategy = error.retry_strategy as Record<string, unknown>;
  expect(Object.keys(strategy).sort()).toEqual(['initial_delay_ms', 'jitter', 'max_delay_ms', 'multiplier', 'type']);
  expect(strategy.initial_delay_ms).toBe((error.retry_after as number) * 1000);
  return error.retry_after as number;
}

/** expectError, except that 429 bodies carry retry_after and retry_strategy next to the four fields. */
function expectErrorWithExtras(res: JsonResponse, status: number, code: string): void {
  const error = errorOf(res);
  expect({ status: res.status, code: error.code, param: error.param, type: error.type }).toEqual({ status, code, param: null, type: 'rate_limit_error' });
  expect(Object.keys(error).sort()).toEqual(['code', 'message', 'param', 'retry_after', 'retry_strategy', 'type']);
  expect(res.headers.get('x-request-id')).toMatch(/^(req_|chatcmpl-)[0-9a-f]{24}$/);
}

describe('the RateLimit headers', () => {
  it('reports the ceiling (base + 50% burst) and counts Remaining down on success', async () => {
    const first = await call(models(), { key: keys.full });
    expect(first.status).toBe(200);
    // One window from now, never more (issue 21: the 100 ms buckets rounded it up to 61).
    expect(limitHeaders(first)).toEqual({ limit: String(CEILING), remaining: '99', reset: '60', warning: null });
    const second = await call(models(), { key: keys.full });
    expect(limitHeaders(second)).toMatchObject({ limit: String(CEILING), remaining: '98' });
  });

  it('sends every X-RateLimit-* twin with the same value', async () => {
    const res = await call(models(), { key: keys.full });
    for (const name of ['limit', 'remaining', 'reset']) {
      expect(res.headers.get(`x-ratelimit-${name}`)).toBe(res.headers.get(`ratelimit-${name}`));
    }
  });

  it('puts the headers on errors too, including those raised after the limiter', async () => {
    const notFound = await call(`${models()}/no-such-model`, { key: keys.full });
    expectError(notFound, 404, 'model_not_found', 'model');
    expect(limitHeaders(notFound)).toMatchObject({ limit: String(CEILING), remaining: '99' });
    const invalid = await call(`${gw.url}/${PROJECT}/chat/v1/chat/completions`, { key: keys.full, body: { messages: 'nope' } });
    expect(invalid.status).toBe(400);
    expect(limitHeaders(invalid)).toMatchObject({ limit: String(CEILING), remaining: '98' });
    const routed = await call(`${gw.url}/${PROJECT}/_semantic/router/v1/chat/completions/multimodel`, { key: keys.full, body: {} });
    expect(routed.status).toBe(400);
    expect(limitHeaders(routed)).toMatchObject({ limit: String(CEILING), remaining: '97' });
  });

  it('leaves requests refused by authentication uncounted and without the headers', async () => {
    const res = await call(models(), { key: `svc_test_${'A'.repeat(43)}` });
    expectError(res, 401, 'invalid_api_key');
    expect(limitHeaders(res)).toEqual({ limit: null, remaining: null, reset: null, warning: null });
    expect(limitHeaders(await call(models(), { key: keys.full })).remaining).toBe('99');
  });

  it('adds X-RateLimit-Warning at 20% remaining and below, 0 included, and not before', async () => {
    const at21 = await spend(CEILING - 21);
    expect(limitHeaders(at21)).toMatchObject({ remaining: '21', warning: null });
    const at20 = await call(models(), { key: keys.full });
    expect(limitHeaders(at20)).toMatchObject({ remaining: '20', warning: 'approaching_limit' });
    const at0 = await spend(20);
    expect(limitHeaders(at0)).toMatchObject({ remaining: '0', warning: 'approaching_limit' });
  });
});

describe('the 429', () => {
  it('fires at 0 remaining with retry_after, retry_strategy and Retry-After, and the headers still on', async () => {
    await spend(CEILING);
    const refused = await call(models(), { key: keys.full });
    const retryAfter = expectRateLimited(refused);
    expect(retryAfter).toBe(60);
    expect(errorOf(refused).retry_strategy).toMatchObject({ type: 'exponential', multiplier: 2, jitter: true });
    expect(limitHeaders(refused)).toMatchObject({ limit: String(CEILING), remaining: '0', warning: 'approaching_limit' });
    expect(refused.headers.get('ratelimit-reset')).toBe(String(retryAfter));
  });

  it('gives Retry-After as the time until the oldest request leaves the window', async () => {
    await spend(CEILING);
    await advanceClock(gw.url, 20_000);
    expect(expectRateLimited(await call(models(), { key: keys.full }))).toBe(40);
  });

  it('does not count refused requests: the window frees up on time however many were refused', async () => {
    await spend(CEILING);
    for (let i = 0; i < 5; i++) expect((await call(models(), { key: keys.full })).status).toBe(429);
    await advanceClock(gw.url, 61_000);
    expect(limitHeaders(await call(models(), { key: keys.full })).remaining).toBe('99');
  });
});

describe('the sliding window', () => {
  it('refills only what left the window: no double burst at a minute boundary', async () => {
    await spend(60);
    await advanceClock(gw.url, 50_000);
    await spend(40);
    expect((await call(models(), { key: keys.full })).status).toBe(429);
    // 61 s after the first 60: those left, the 40 sent at +50 s are still counted.
    await advanceClock(gw.url, 11_000);
    const after = await call(models(), { key: keys.full });
    expect(limitHeaders(after).remaining).toBe('59');
    await spend(59);
    expectRateLimited(await call(models(), { key: keys.full }));
  });

  it('admits exactly the ceiling out of 500 requests fired at once', async () => {
    const results = await Promise.all(Array.from({ length: 500 }, () => call(models(), { key: keys.full })));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(CEILING);
    expect(statuses.filter((s) => s === 429)).toHaveLength(500 - CEILING);
    const remaining = results.filter((r) => r.status === 200).map((r) => Number(r.headers.get('ratelimit-remaining')));
    expect(new Set(remaining).size).toBe(CEILING);
    expect(Math.min(...remaining)).toBe(0);
  });
});

describe('the per-key quota (SPEC Authentication 8)', () => {
  it('wins over a looser project limit, in the headers and in the 429', async () => {
    const first = await call(models(), { key: quotaKey });
    expect(limitHeaders(first)).toMatchObject({ limit: '5', remaining: '4', reset: '10', warning: null });
    const last = await spend(4, models(), quotaKey);
    expect(limitHeaders(last)).toMatchObject({ limit: '5', remaining: '0', warning: 'approaching_limit' });
    const refused = await call(models(), { key: quotaKey });
    expect(expectRateLimited(refused)).toBe(10);
    expect(errorOf(refused).message).toMatch(/API key's quota of 5 requests per 10 s/);
    // Another key of the same project is not affected, and the project counted the quota key's 5.
    expect(limitHeaders(await call(models(), { key: keys.full })).remaining).toBe(String(CEILING - 6));
  });

  it('rolls over its own window (quota_window seconds)', async () => {
    await spend(5, models(), quotaKey);
    expect((await call(models(), { key: quotaKey })).status).toBe(429);
    await advanceClock(gw.url, 10_100);
    expect(limitHeaders(await call(models(), { key: quotaKey }))).toMatchObject({ limit: '5', remaining: '4' });
  });

  it('applies to management requests too: every request made with the key counts', async () => {
    await spend(5, mgmt(), quotaKey);
    expectRateLimited(await call(models(), { key: quotaKey }));
  });
});

describe('the management limit (separate from inference)', () => {
  it('allows 60 control-plane requests per minute, with no burst', async () => {
    const first = await call(mgmt(), { key: keys.full });
    expect(first.status).toBe(200);
    expect(limitHeaders(first)).toMatchObject({ limit: '60', remaining: '59' });
    const last = await spend(59, mgmt());
    expect(limitHeaders(last)).toMatchObject({ limit: '60', remaining: '0', warning: 'approaching_limit' });
    expectRateLimited(await call(mgmt(), { key: keys.full }));
    // Webhooks are control-plane too.
    expectRateLimited(await call(`${gw.url}/${PROJECT}/v1/webhooks`, { key: keys.full }));
  });

  it('never consumes the inference window, and inference never consumes it', async () => {
    await spend(60, mgmt());
    expect((await call(mgmt(), { key: keys.full })).status).toBe(429);
    expect(limitHeaders(await call(models(), { key: keys.full }))).toMatchObject({ limit: String(CEILING), remaining: '99' });

    await advanceClock(gw.url, 61_000);
    await spend(CEILING);
    expect((await call(models(), { key: keys.full })).status).toBe(429);
    expect(limitHeaders(await call(mgmt(), { key: keys.full }))).toMatchObject({ limit: '60', remaining: '59' });
  });

  it('gives file uploads, file content and conversation items their own 600 per minute', async () => {
    const upload = await call(`${gw.url}/${PROJECT}/v1/files`, { key: keys.full, body: {} });
    expect(limitHeaders(upload)).toMatchObject({ limit: '600', remaining: '599' });
    const content = await call(`${gw.url}/${PROJECT}/v1/files/file_1/content`, { key: keys.full });
    expect(limitHeaders(content)).toMatchObject({ limit: '600', remaining: '598' });
    const items = await call(`${gw.url}/${PROJECT}/v1/conversations/conv_1/items`, { key: keys.full, body: {} });
    expect(limitHeaders(items)).toMatchObject({ limit: '600', remaining: '599' });
    const listFiles = await call(`${gw.url}/${PROJECT}/v1/files`, { key: keys.full });
    expect(limitHeaders(listFiles)).toMatchObject({ limit: '60', remaining: '59' });
  });
});

describe('unmetered limits (0) and the token limit', () => {
  let open: GatewayProcess;
  let tight: GatewayProcess;
  const openQuotaKey = mintTestKey('test');
  const chat = (g: GatewayProcess): string => `${g.url}/${PROJECT}/chat/v1/chat/completions`;
  const ask = (g: GatewayProcess, body: Record<string, unknown> = {}) =>
    call(chat(g), { key: keys.full, body: { model: 'm', messages: [{ role: 'user', content: 'hello' }], ...body } });

  beforeAll(async () => {
    [open, tight] = await Promise.all([
      startGatewayProcess(
        testConfig(sim.url, keys, {
          rateLimit: { requests_per_minute: 0, tokens_per_minute: 0 },
          extraKeys: [{ value: openQuotaKey, scopes: ['inference'], quota_requests: 2 }],
        }),
      ),
      startGatewayProcess(testConfig(sim.url, keys, { rateLimit: { tokens_per_minute: 20 } })),
    ]);
  });

  afterAll(async () => {
    await Promise.all([open?.stop(), tight?.stop()]);
  });

  it('omits the numeric headers when the request limit is 0', async () => {
    const res = await call(`${open.url}/${PROJECT}/v1/models`, { key: keys.full });
    expect(res.status).toBe(200);
    expect(limitHeaders(res)).toEqual({ limit: null, remaining: null, reset: null, warning: null });
    expect(res.headers.get('x-ratelimit-limit')).toBeNull();
  });

  it('still applies a key quota in an unmetered project, and reports it', async () => {
    const res = await call(`${open.url}/${PROJECT}/v1/models`, { key: openQuotaKey });
    expect(limitHeaders(res)).toMatchObject({ limit: '2', remaining: '1' });
  });

  it('never refuses on tokens when the token limit is 0', async () => {
    for (let i = 0; i < 3; i++) expect((await ask(open, { sim: { tokens: 500 } })).status).toBe(200);
  });

  it('charges a turn after it completes: one large turn overshoots, the next request gets 429 with Retry-After 60', async () => {
    const big = await ask(tight, { sim: { tokens: 200 } });
    expect(big.status).toBe(200);
    const refused = await ask(tight);
    expect(expectRateLimited(refused, 'token_rate_limit_exceeded')).toBe(60);
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(errorOf(refused).retry_strategy).toMatchObject({ type: 'fixed', initial_delay_ms: 60_000 });
    // Token refusals apply to every inference route and consume no request slot.
    const listing = await call(`${tight.url}/${PROJECT}/v1/models`, { key: keys.full });
    expectRateLimited(listing, 'token_rate_limit_exceeded');
    expect(limitHeaders(listing).remaining).toBe('1535');
    await advanceClock(tight.url, 61_000);
    expect((await ask(tight)).status).toBe(200);
  });

  it('counts prompt + completion - cached tokens', async () => {
    await advanceClock(tight.url, 61_000);
    // 16 completion tokens + a few prompt tokens, all reported as cached -> under 20.
    expect((await ask(tight, { sim: { tokens: 16, cached_tokens: 1000 } })).status).toBe(200);
    expect((await ask(tight, { sim: { tokens: 16 } })).status).toBe(200);
    expectRateLimited(await ask(tight), 'token_rate_limit_exceeded');
  });
});
