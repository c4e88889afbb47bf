/**
 * The webhook management routes (SPEC "Webhooks", "Webhook endpoint", Limits) on a gateway with the
 * default outbound policy: https only, public addresses only. Valid targets are public address literals,
 * so no test depends on DNS; nothing here is ever delivered (no events are emitted).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OTHER_PROJECT, PROJECT } from '../helpers/configs.js';
import { advanceClock, call, expectError, type JsonResponse } from '../helpers/http.js';
import { useGatewaySuite } from '../helpers/suite.js';

const suite = useGatewaySuite();
const PUBLIC_URL = 'https://93.184.216.34/hooks';

// Control-plane routes share 60 requests a minute per project (SPEC Limits): each test starts a fresh window.
beforeEach(async () => {
  await advanceClock(suite.gw.url, 61_000);
});

// A project holds at most 20 endpoints: each test removes what it made in PROJECT.
const made: string[] = [];
afterEach(async () => {
  for (const id of made.splice(0)) await call(`${hooks()}/${id}`, { key: suite.keys.full, method: 'DELETE' });
});

const hooks = (project = PROJECT): string => `${suite.gw.url}/${project}/v1/webhooks`;
type Endpoint = Record<string, unknown> & { id: string };

async function create(body: object, project = PROJECT): Promise<JsonResponse> {
  const res = await call(hooks(project), { key: project === PROJECT ? suite.keys.full : suite.keys.otherProject, body });
  if (res.status === 201 && project === PROJECT) made.push((res.body as Endpoint).id);
  return res;
}

async function created(body: object = { url: PUBLIC_URL, events: ['exec.completed'] }): Promise<Endpoint> {
  const res = await create(body);
  expect(res.status).toBe(201);
  return res.body as Endpoint;
}

describe('authentication', () => {
  it('returns 401 authentication_required without a key', async () => {
    expectError(await call(hooks()), 401, 'authentication_required');
  });

  it('returns 403 scope_insufficient for a key without the management scope', async () => {
    expectError(await call(hooks(), { key: suite.keys.inferenceOnly }), 403, 'scope_insufficient');
  });

  it('returns 403 project_mismatch for a key of another project', async () => {
    expectError(await call(hooks(), { key: suite.keys.otherProject }), 403, 'project_mismatch');
  });

  it('serves a management-only key', async () => {
    expect((await call(hooks(), { key: suite.keys.managementOnly })).status).toBe(200);
  });
});

describe('POST /v1/webhooks', () => {
  it('creates an active endpoint with exactly SPEC\'s fields and a whsec_ secret', async () => {
    const res = await create({ url: PUBLIC_URL, events: ['exec.completed', 'batch.failed'], description: 'CI', metadata: { team: 'infra' } });
    expect(res.status).toBe(201);
    const w = res.body as Endpoint;
    expect(Object.keys(w)).toEqual(['id', 'object', 'url', 'description', 'secret', 'events', 'is_active', 'metadata', 'created_at', 'updated_at']);
    expect(w).toMatchObject({ object: 'webhook_endpoint', url: PUBLIC_URL, description: 'CI', events: ['exec.completed', 'batch.failed'], is_active: true, metadata: { team: 'infra' } });
    expect(w.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(w.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(Number.isInteger(w.created_at)).toBe(true);
    expect(w.updated_at).toBe(w.created_at);
  });

  it('defaults description to null and metadata to {}', async () => {
    const w = await created();
    expect(w).toMatchObject({ description: null, metadata: {} });
  });

  it('never returns the secret again: not from get, list or update', async () => {
    const w = await created();
    const got = (await call(`${hooks()}/${w.id}`, { key: suite.keys.full })).body as Endpoint;
    expect(got).not.toHaveProperty('secret');
    const listed = (await call(`${hooks()}?limit=100`, { key: suite.keys.full })).body as { data: Endpoint[] };
    expect(listed.data.every((x) => !('secret' in x))).toBe(true);
    const updated = (await call(`${hooks()}/${w.id}`, { key: suite.keys.full, method: 'PUT', body: { description: 'x' } })).body as Endpoint;
    expect(updated).not.toHaveProperty('secret');
  });

  it('accepts reserved event types (they are never delivered)', async () => {
    expect((await create({ url: PUBLIC_URL, events: ['exec.ambiguous', 'exec.workspace_budget_exhausted'] })).status).toBe(201);
  });

  it('accepts the legacy budget alert type', async () => {
    expect((await create({ url: PUBLIC_URL, events: ['budget.threshold_reached'] })).status).toBe(201);
  });

  it.each<[string, unknown, string]>([
    ['no url', { events: ['exec.completed'] }, 'url'],
    ['a url that is not a URL', { url: 'hooks.example.com/in', events: ['exec.completed'] }, 'url'],
    ['a url that is not a string', { url: 42, events: ['exec.completed'] }, 'url'],
    ['a url over 2048 characters', { url: `https://93.184.216.34/${'a'.repeat(2048)}`, events: ['exec.completed'] }, 'url'],
    ['no events', { url: PUBLIC_URL }, 'events'],
    ['an empty events list', { url: PUBLIC_URL, events: [] }, 'events'],
    ['an unknown event type', { url: PUBLIC_URL, events: ['exec.completed', 'exec.finished'] }, 'events[1]'],
    ['an event family without its type', { url: PUBLIC_URL, events: ['exec'] }, 'events[0]'],
    ['an event type that is not a string', { url: PUBLIC_URL, events: [7] }, 'events[0]'],
    ['a repeated event type', { url: PUBLIC_URL, events: ['exec.failed', 'exec.failed'] }, 'events[1]'],
    ['17 metadata pairs', { url: PUBLIC_URL, events: ['exec.failed'], metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }, 'metadata'],
    ['a metadata value that is not a string', { url: PUBLIC_URL, events: ['exec.failed'], metadata: { n: 1 } }, 'metadata'],
    ['a metadata key over 64 characters', { url: PUBLIC_URL, events: ['exec.failed'], metadata: { ['k'.repeat(65)]: 'v' } }, 'metadata'],
    ['a metadata value over 512 characters', { url: PUBLIC_URL, events: ['exec.failed'], metadata: { k: 'v'.repeat(513) } }, 'metadata'],
    ['metadata that is a list', { url: PUBLIC_URL, events: ['exec.failed'], metadata: ['a'] }, 'metadata'],
    ['a description over 512 characters', { url: PUBLIC_URL, events: ['exec.failed'], description: 'd'.repeat(513) }, 'description'],
    ['a secret chosen by the client', { url: PUBLIC_URL, events: ['exec.failed'], secret: 'whsec_mine' }, 'secret'],
    ['is_active, which only PUT takes', { url: PUBLIC_URL, events: ['exec.failed'], is_active: false }, 'is_active'],
  ])('refuses %s with 400 invalid_request', async (_what, body, param) => {
    expectError(await create(body as object), 400, 'invalid_request', param);
  });

  it('accepts 16 metadata pairs', async () => {
    const metadata = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, 'v'.repeat(512)]));
    expect((await create({ url: PUBLIC_URL, events: ['exec.failed'], metadata })).status).toBe(201);
  });

  it('refuses a body that is not a JSON object', async () => {
    expectError(await call(hooks(), { key: suite.keys.full, body: '{"url":' }), 400, 'invalid_json');
    expectError(await create([PUBLIC_URL]), 400, 'invalid_request', null);
  });

  it('refuses a body over the 16 KiB management limit with 413', async () => {
    const res = await create({ url: PUBLIC_URL, events: ['exec.failed'], description: 'x'.repeat(17 * 1024) });
    expectError(res, 413, 'payload_too_large');
  });

  it.each<[string, string]>([
    ['plain http', 'http://93.184.216.34/hooks'],
    ['another scheme', 'ftp://93.184.216.34/hooks'],
    ['credentials in the URL', 'https://user:pass@93.184.216.34/hooks'],
    ['a private 10/8 address', 'https://10.0.0.5/hooks'],
    ['a private 172.16/12 address', 'https://172.20.1.1/hooks'],
    ['a private 192.168/16 address', 'https://192.168.0.10/hooks'],
    ['loopback', 'https://127.0.0.1:8443/hooks'],
    ['loopback spelt in hex', 'https://0x7f.1/hooks'],
    ['loopback spelt as one number', 'https://2130706433/hooks'],
    ['the cloud metadata service (link-local)', 'https://169.254.169.254/latest/meta-data'],
    ['a carrier-grade NAT address', 'https://100.64.1.1/hooks'],
    ['a multicast address', 'https://224.0.0.251/hooks'],
    ['the unspecified address', 'https://0.0.0.0/hooks'],
    ['IPv6 loopback', 'https://[::1]/hooks'],
    ['IPv6 unspecified', 'https://[::]/hooks'],
    ['IPv6 link-local', 'https://[fe80::1]/hooks'],
    ['IPv6 unique-local', 'https://[fd00::1]/hooks'],
    ['IPv6 multicast', 'https://[ff02::1]/hooks'],
    ['an IPv4-mapped IPv6 loopback', 'https://[::ffff:127.0.0.1]/hooks'],
    ['an IPv4-mapped IPv6 public address', 'https://[::ffff:8.8.8.8]/hooks'],
    ['a host name that resolves to loopback', 'https://localhost/hooks'],
  ])('refuses %s with 400 url_not_allowed', async (_what, url) => {
    const res = await create({ url, events: ['exec.completed'] });
    expectError(res, 400, 'url_not_allowed', 'url');
  });

  it('says why a URL is refused', async () => {
    const res = await create({ url: 'https://localhost/hooks', events: ['exec.completed'] });
    expect((res.body as { error: { message: string } }).error.message).toMatch(/^url must not target a private or internal address: localhost resolves to (127\.0\.0\.1|::1), a loopback address\.$/);
  });

  it('allows at most 20 endpoints per project (400 webhook_limit_reached), and one more after a delete', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 20; i += 1) {
      const res = await create({ url: PUBLIC_URL, events: ['exec.completed'] }, OTHER_PROJECT);
      expect(res.status).toBe(201);
      ids.push((res.body as Endpoint).id);
    }
    expectError(await create({ url: PUBLIC_URL, events: ['exec.completed'] }, OTHER_PROJECT), 400, 'webhook_limit_reached');
    await call(`${hooks(OTHER_PROJECT)}/${ids[0]}`, { key: suite.keys.otherProject, method: 'DELETE' });
    expect((await create({ url: PUBLIC_URL, events: ['exec.completed'] }, OTHER_PROJECT)).status).toBe(201);
  });
});

describe('GET /v1/webhooks', () => {
  it('pages newest first with limit, after and has_more', async () => {
    const made = [await created(), await created(), await created()].map((w) => w.id);
    const first = await call(`${hooks()}?limit=2`, { key: suite.keys.full });
    expect(first.status).toBe(200);
    const page1 = first.body as { object: string; data: Endpoint[]; has_more: boolean };
    expect(page1.object).toBe('list');
    expect(page1.data.map((w) => w.id)).toEqual([made[2], made[1]]);
    expect(page1.has_more).toBe(true);
    const page2 = (await call(`${hooks()}?limit=2&after=${made[1]}`, { key: suite.keys.full })).body as { data: Endpoint[]; has_more: boolean };
    expect(page2.data[0]?.id).toBe(made[0]);
  });

  it('reports has_more false on the last page', async () => {
    await created();
    const all = (await call(`${hooks()}?limit=100`, { key: suite.keys.full })).body as { data: Endpoint[]; has_more: boolean };
    expect(all.has_more).toBe(false);
    const last = all.data.at(-1);
    const after = (await call(`${hooks()}?after=${last?.id}`, { key: suite.keys.full })).body as { data: Endpoint[]; has_more: boolean };
    expect(after).toMatchObject({ data: [], has_more: false });
  });

  it('lists only the project\'s own endpoints', async () => {
    const mine = await created();
    const theirs = (await call(`${hooks(OTHER_PROJECT)}?limit=100`, { key: suite.keys.otherProject })).body as { data: Endpoint[] };
    expect(theirs.data.map((w) => w.id)).not.toContain(mine.id);
  });

  it.each(['0', '101', 'ten', '1.5', '-1'])('refuses limit=%s with 400 invalid_limit', async (limit) => {
    expectError(await call(`${hooks()}?limit=${limit}`, { key: suite.keys.full }), 400, 'invalid_limit', 'limit');
  });

  it('refuses an after that names no endpoint of the project with 400 invalid_query', async () => {
    expectError(await call(`${hooks()}?after=00000000-0000-4000-8000-000000000000`, { key: suite.keys.full }), 400, 'invalid_query', 'after');
  });
});

describe('GET /v1/webhooks/{id}', () => {
  it('returns the endpoint without its secret', async () => {
    const w = await created({ url: PUBLIC_URL, events: ['file.uploaded'], metadata: { a: 'b' } });
    const res = await call(`${hooks()}/${w.id}`, { key: suite.keys.full });
    expect(res.status).toBe(200);
    const { secret: _secret, ...rest } = w;
    expect(res.body).toEqual(rest);
  });

  it('returns 404 webhook_not_found for an unknown id, a malformed id and another project\'s endpoint', async () => {
    expectError(await call(`${hooks()}/00000000-0000-4000-8000-000000000000`, { key: suite.keys.full }), 404, 'webhook_not_found');
    expectError(await call(`${hooks()}/not-an-id`, { key: suite.keys.full }), 404, 'webhook_not_found');
    const theirs = (await create({ url: PUBLIC_URL, events: ['exec.completed'] }, OTHER_PROJECT)).body as Endpoint;
    expectError(await call(`${hooks()}/${theirs.id}`, { key: suite.keys.full }), 404, 'webhook_not_found');
  });
});

describe('PUT /v1/webhooks/{id}', () => {
  const put = (id: string, body: unknown) => call(`${hooks()}/${id}`, { key: suite.keys.full, method: 'PUT', body: body as object });

  it('changes only the fields provided', async () => {
    const w = await created({ url: PUBLIC_URL, events: ['exec.completed'], description: 'before', metadata: { a: '1' } });
    await advanceClock(suite.gw.url, 2000);
    const res = await put(w.id, { is_active: false });
    expect(res.status).toBe(200);
    const u = res.body as Endpoint;
    expect(u).toMatchObject({ id: w.id, url: PUBLIC_URL, events: ['exec.completed'], description: 'before', metadata: { a: '1' }, is_active: false, created_at: w.created_at });
    expect(u.updated_at as number).toBeGreaterThan(w.updated_at as number);
    expect((await call(`${hooks()}/${w.id}`, { key: suite.keys.full })).body).toEqual(u);
  });

  it('replaces metadata and events as a whole, and changes url and description', async () => {
    const w = await created({ url: PUBLIC_URL, events: ['exec.completed'], metadata: { a: '1', b: '2' } });
    const res = await put(w.id, { url: 'https://8.8.4.4/new', events: ['batch.completed'], metadata: { c: '3' }, description: 'after' });
    expect(res.body).toMatchObject({ url: 'https://8.8.4.4/new', events: ['batch.completed'], metadata: { c: '3' }, description: 'after', is_active: true });
  });

  it('clears the description with null and treats null elsewhere as not provided', async () => {
    const w = await created({ url: PUBLIC_URL, events: ['exec.completed'], description: 'd' });
    const res = await put(w.id, { description: null, events: null, metadata: null });
    expect(res.body).toMatchObject({ description: null, events: ['exec.completed'], metadata: {} });
  });

  it('changes nothing for an empty body', async () => {
    const w = await created();
    const res = await put(w.id, {});
    const { secret: _secret, ...rest } = w;
    expect(res.body).toEqual(rest);
  });

  it.each<[string, unknown, number, string, string]>([
    ['an empty events list', { events: [] }, 400, 'invalid_request', 'events'],
    ['an unknown event type', { events: ['nope.nope'] }, 400, 'invalid_request', 'events[0]'],
    ['is_active that is not a boolean', { is_active: 'no' }, 400, 'invalid_request', 'is_active'],
    ['17 metadata pairs', { metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }, 400, 'invalid_request', 'metadata'],
    ['a field SPEC does not list', { secret: 'whsec_x' }, 400, 'invalid_request', 'secret'],
    ['an http url', { url: 'http://93.184.216.34/' }, 400, 'url_not_allowed', 'url'],
    ['a private url', { url: 'https://192.168.1.1/' }, 400, 'url_not_allowed', 'url'],
  ])('refuses %s', async (_what, body, status, code, param) => {
    const w = await created();
    expectError(await put(w.id, body), status, code, param);
    const { secret: _secret, ...unchanged } = w;
    expect((await call(`${hooks()}/${w.id}`, { key: suite.keys.full })).body).toEqual(unchanged);
  });

  it('returns 404 webhook_not_found for an unknown id', async () => {
    expectError(await put('00000000-0000-4000-8000-000000000000', { is_active: true }), 404, 'webhook_not_found');
  });
});

describe('DELETE /v1/webhooks/{id}', () => {
  it('answers 200 with a deletion body, after which the endpoint is gone', async () => {
    const w = await created();
    const res = await call(`${hooks()}/${w.id}`, { key: suite.keys.full, method: 'DELETE' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: w.id, object: 'webhook_endpoint', deleted: true });
    expectError(await call(`${hooks()}/${w.id}`, { key: suite.keys.full }), 404, 'webhook_not_found');
    expectError(await call(`${hooks()}/${w.id}/deliveries`, { key: suite.keys.full }), 404, 'webhook_not_found');
    expectError(await call(`${hooks()}/${w.id}`, { key: suite.keys.full, method: 'DELETE' }), 404, 'webhook_not_found');
  });
});

describe('GET /v1/webhooks/{id}/deliveries', () => {
  it('lists nothing for an endpoint that received no event', async () => {
    const w = await created();
    const res = await call(`${hooks()}/${w.id}/deliveries`, { key: suite.keys.full });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ object: 'list', data: [], has_more: false });
  });

  it('refuses a bad limit and an unknown cursor', async () => {
    const w = await created();
    expectError(await call(`${hooks()}/${w.id}/deliveries?limit=0`, { key: suite.keys.full }), 400, 'invalid_limit', 'limit');
    expectError(await call(`${hooks()}/${w.id}/deliveries?after=del_000000000000000000000000`, { key: suite.keys.full }), 400, 'invalid_query', 'after');
  });

  it('returns 404 webhook_not_found for an unknown endpoint', async () => {
    expectError(await call(`${hooks()}/00000000-0000-4000-8000-000000000000/deliveries`, { key: suite.keys.full }), 404, 'webhook_not_found');
  });
});

describe('POST /v1/webhooks/{id}/test', () => {
  it('returns 404 webhook_not_found for an unknown endpoint', async () => {
    expectError(await call(`${hooks()}/00000000-0000-4000-8000-000000000000/test`, { key: suite.keys.full, method: 'POST' }), 404, 'webhook_not_found');
  });

  it('is refused without the management scope', async () => {
    const w = await created();
    expectError(await call(`${hooks()}/${w.id}/test`, { key: suite.keys.inferenceOnly, method: 'POST' }), 403, 'scope_insufficient');
  });
});
