/**
 * The key-management API (SPEC "Key management", "API key" resource and states, Authentication 10-11)
 * over HTTP: create, list, get, revoke, rotate with its 24 h grace, expiry, and durability across a
 * restart. The management rate limit is raised here (limits.test.ts covers it), so this suite can make
 * as many control-plane calls as it needs.
 */
import { describe, expect, it } from 'vitest';
import { CHAT_ID, OTHER_PROJECT, PROJECT, WS_B, WS_DEFAULT } from '../helpers/configs.js';
import { advanceClock, call, expectError, type JsonResponse } from '../helpers/http.js';
import { startGatewayProcess } from '../helpers/processes.js';
import { useGatewaySuite } from '../helpers/suite.js';

const suite = useGatewaySuite({ limits: { management_requests_per_minute: 100_000 } });

const DAY_MS = 24 * 60 * 60 * 1000;
const keysUrl = (base = suite.gw.url, project = PROJECT): string => `${base}/${project}/v1/management/api-keys`;
const models = (base = suite.gw.url): string => `${base}/${PROJECT}/v1/models`;
const direct = (slug: string): string => `${suite.gw.url}/${PROJECT}/${slug}/v1/models`;

interface KeyWire {
  id: string;
  object: string;
  name: string | null;
  prefix: string;
  status: string;
  scopes: string[];
  allowed_ips: string[];
  blocked_ips: string[];
  expires_at: number | null;
  quota_requests: number;
  quota_window: number;
  endpoint_id: string | null;
  allowed_workspace_ids: string[] | null;
  source: string;
  created_at: number;
  revoked_at: number | null;
  previous_value_valid_until: number | null;
  value?: string;
}

async function create(body: Record<string, unknown> = {}, key = suite.keys.full): Promise<KeyWire & { value: string }> {
  const res = await call(keysUrl(), { key, body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as KeyWire & { value: string };
}

const status = async (url: string, key: string): Promise<number> => (await call(url, { key })).status;
const now = (): Promise<number> => advanceClock(suite.gw.url, 0);

describe('POST /{project}/v1/management/api-keys', () => {
  it('creates svc_mgmt_<43 base64url> with SPEC defaults, shown once, and it works at once', async () => {
    const res = await call(keysUrl(), { key: suite.keys.full, body: {} });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('ratelimit-limit')).toBe('100000');
    const k = res.body as KeyWire & { value: string };
    expect(k.value).toMatch(/^svc_mgmt_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(k.value.slice('svc_mgmt_'.length), 'base64url')).toHaveLength(32);
    expect(k).toMatchObject({
      object: 'api_key',
      name: null,
      status: 'active',
      scopes: ['inference'],
      allowed_ips: [],
      blocked_ips: [],
      expires_at: null,
      quota_requests: 0,
      quota_window: 60,
      endpoint_id: null,
      allowed_workspace_ids: null,
      source: 'api',
      revoked_at: null,
      previous_value_valid_until: null,
    });
    expect(k.id).toMatch(/^key_[0-9a-f]{24}$/);
    expect(k.value.startsWith(k.prefix)).toBe(true);
    expect(k.prefix.length).toBeLessThan(k.value.length - 30);
    expect(await status(models(), k.value)).toBe(200);
    expectError(await call(keysUrl(), { key: k.value }), 403, 'scope_insufficient');
  });

  it('stores every field of the key table and enforces them on the new key', async () => {
    const expiresAt = Math.floor((await now()) / 1000) + 3600;
    const k = await create({
      name: 'ci runner',
      scopes: ['inference'],
      allowed_ips: ['127.0.0.0/8', '::1'],
      blocked_ips: ['10.0.0.1'],
      expires_at: new Date(expiresAt * 1000).toISOString(),
      quota_requests: 3,
      quota_window: 30,
      endpoint_id: CHAT_ID,
      allowed_workspace_ids: [WS_DEFAULT],
    });
    expect(k).toMatchObject({
      name: 'ci runner',
      allowed_ips: ['127.0.0.0/8', '::1'],
      blocked_ips: ['10.0.0.1'],
      expires_at: expiresAt,
      quota_requests: 3,
      quota_window: 30,
      endpoint_id: CHAT_ID,
      allowed_workspace_ids: [WS_DEFAULT],
    });
    const ok = await call(direct('chat'), { key: k.value });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('ratelimit-limit')).toBe('3');
    expectError(await call(direct('reasoner'), { key: k.value }), 403, 'endpoint_restricted');
  });

  it('accepts expires_at as Unix seconds too (the form responses use)', async () => {
    const at = Math.floor((await now()) / 1000) + 600;
    expect((await create({ expires_at: at })).expires_at).toBe(at);
  });

  it('confines a key to its workspace list', async () => {
    const k = await create({ allowed_workspace_ids: [WS_B] });
    expect(await status(direct('b-only'), k.value)).toBe(200);
    expectError(await call(direct('chat'), { key: k.value, headers: { 'x-workspace-id': WS_DEFAULT } }), 403, 'workspace_not_allowed');
  });

  it('gives a key created without a list every workspace of the project (it has no user)', async () => {
    const k = await create({});
    expect(await status(direct('b-only'), k.value)).toBe(200);
    expect((await call(direct('chat'), { key: k.value, headers: { 'x-workspace-id': WS_B } })).status).toBe(200);
  });

  it('creates a management key that can manage keys in turn', async () => {
    const k = await create({ scopes: ['management'] });
    expect((await call(keysUrl(), { key: k.value })).status).toBe(200);
    expectError(await call(models(), { key: k.value }), 403, 'scope_insufficient');
  });

  it.each<[string, unknown, string | null]>([
    ['an empty workspace list', { allowed_workspace_ids: [] }, 'allowed_workspace_ids'],
    ['a workspace the project does not have', { allowed_workspace_ids: [WS_B, 'ws_0fff'] }, 'allowed_workspace_ids[1]'],
    ['a workspace id that is not ws_<hex>', { allowed_workspace_ids: ['default'] }, 'allowed_workspace_ids[0]'],
    ['a workspace list with the management scope', { scopes: ['inference', 'management'], allowed_workspace_ids: [WS_B] }, 'allowed_workspace_ids'],
    ['no scopes', { scopes: [] }, 'scopes'],
    ['an unknown scope', { scopes: ['inference', 'root'] }, 'scopes[1]'],
    ['an unknown endpoint', { endpoint_id: 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa' }, 'endpoint_id'],
    ['an endpoint id that is not a UUID', { endpoint_id: 'chat' }, 'endpoint_id'],
    ['an allowlist entry that is not an address', { allowed_ips: ['127.0.0.1', 'localhost'] }, 'allowed_ips[1]'],
    ['a blocklist that is not an array', { blocked_ips: '10.0.0.1' }, 'blocked_ips'],
    ['an expiry that is not a timestamp', { expires_at: 'tomorrow' }, 'expires_at'],
    ['an expiry in the past', { expires_at: '2020-01-01T00:00:00Z' }, 'expires_at'],
    ['a negative quota', { quota_requests: -1 }, 'quota_requests'],
    ['a fractional quota', { quota_requests: 1.5 }, 'quota_requests'],
    ['a quota window of 0', { quota_window: 0 }, 'quota_window'],
    ['a name that is not a string', { name: 42 }, 'name'],
    ['a field the key table does not have', { scope: ['management'] }, 'scope'],
    ['a body that is not an object', [1, 2], null],
  ])('refuses %s with 400 invalid_request', async (_what, body, param) => {
    expectError(await call(keysUrl(), { key: suite.keys.full, body: body as object }), 400, 'invalid_request', param);
  });

  it('words project-checked refusals as the other field rules: "<param> <requirement>"', async () => {
    // They read "endpoint_id project proj_test has no endpoint ..." and "allowed_ips[1] localhost is not ...".
    const message = async (body: object): Promise<unknown> => ((await call(keysUrl(), { key: suite.keys.full, body })).body as { error: { message: string } }).error.message;
    expect(await message({ endpoint_id: 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa' })).toBe(`endpoint_id names no endpoint of project ${PROJECT} (aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa).`);
    expect(await message({ allowed_workspace_ids: [WS_B, 'ws_0fff'] })).toBe(`allowed_workspace_ids[1] names no workspace of project ${PROJECT} (ws_0fff).`);
    expect(await message({ allowed_ips: ['127.0.0.1', 'localhost'] })).toBe('allowed_ips[1] must be an IPv4/IPv6 address or CIDR range; got "localhost".');
  });

  it('refuses a body that is not JSON with 400 invalid_json', async () => {
    expectError(await call(keysUrl(), { key: suite.keys.full, body: '{"scopes": [', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
  });

  it('caps the body at 16 KiB with 413 payload_too_large', async () => {
    expectError(await call(keysUrl(), { key: suite.keys.full, body: { name: 'x'.repeat(17 * 1024) } }), 413, 'payload_too_large');
  });

  it('needs the management scope, the key\'s own project and a key', async () => {
    expectError(await call(keysUrl(), { key: suite.keys.inferenceOnly, body: {} }), 403, 'scope_insufficient');
    expectError(await call(keysUrl(), { key: suite.keys.otherProject, body: {} }), 403, 'project_mismatch');
    expectError(await call(keysUrl(), { body: {} }), 401, 'authentication_required');
  });
});

describe('GET /{project}/v1/management/api-keys[/{key_id}]', () => {
  it('lists every key of the project with its prefix and never a value', async () => {
    const k = await create({ name: 'listed' });
    const res = await call(keysUrl(), { key: suite.keys.managementOnly });
    expect(res.status).toBe(200);
    const list = res.body as { object: string; data: KeyWire[] };
    expect(list.object).toBe('list');
    const text = JSON.stringify(list);
    for (const v of [k.value, suite.keys.full, suite.keys.managementOnly]) expect(text).not.toContain(v);
    expect(list.data.find((x) => x.id === k.id)).toMatchObject({ name: 'listed', prefix: k.prefix, status: 'active', source: 'api' });
    expect(list.data.every((x) => !('value' in x))).toBe(true);
    const configKeys = list.data.filter((x) => x.source === 'config');
    expect(configKeys.length).toBe(10);
    expect(configKeys.find((x) => x.prefix === suite.keys.expired.slice(0, 'svc_test_'.length + 4))?.status).toBe('expired');
  });

  it('gets one key, and 404 api_key_not_found for an unknown id or another project\'s key', async () => {
    const k = await create({ name: 'one' });
    const res = await call(`${keysUrl()}/${k.id}`, { key: suite.keys.full });
    expect(res.status).toBe(200);
    const { value: _value, ...withoutValue } = k;
    expect(res.body).toEqual(withoutValue);
    expectError(await call(`${keysUrl()}/key_000000000000000000000000`, { key: suite.keys.full }), 404, 'api_key_not_found');
    const other = (await call(keysUrl(suite.gw.url, OTHER_PROJECT), { key: suite.keys.otherProject })).body as { data: KeyWire[] };
    const otherId = other.data[0]?.id ?? '';
    expect(otherId).toMatch(/^key_/);
    expectError(await call(`${keysUrl()}/${otherId}`, { key: suite.keys.full }), 404, 'api_key_not_found');
  });
});

describe('DELETE /{project}/v1/management/api-keys/{key_id} (revoke)', () => {
  it('revokes at once and for good: 401 key_revoked from the next request on', async () => {
    const k = await create({});
    expect(await status(models(), k.value)).toBe(200);
    const res = await call(`${keysUrl()}/${k.id}`, { method: 'DELETE', key: suite.keys.full });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: k.id, status: 'revoked' });
    expect((res.body as KeyWire).revoked_at).toBeGreaterThan(0);
    expectError(await call(models(), { key: k.value }), 401, 'key_revoked');
    const again = await call(`${keysUrl()}/${k.id}`, { method: 'DELETE', key: suite.keys.full });
    expect(again.body).toEqual(res.body);
    expectError(await call(`${keysUrl()}/${k.id}/rotate`, { method: 'POST', key: suite.keys.full }), 409, 'invalid_state');
  });

  it('shows no grace for a rotated-out value once the key is revoked: revocation ends every value', async () => {
    // Regression: the revoked key still reported previous_value_valid_until a day ahead, while that value
    // already got 401 key_revoked.
    const k = await create({});
    const rotated = (await call(`${keysUrl()}/${k.id}/rotate`, { method: 'POST', key: suite.keys.full })).body as KeyWire & { value: string };
    expect(rotated.previous_value_valid_until).toBeGreaterThan(0);
    const revoked = await call(`${keysUrl()}/${k.id}`, { method: 'DELETE', key: suite.keys.full });
    expect(revoked.body).toMatchObject({ status: 'revoked', previous_value_valid_until: null });
    expectError(await call(models(), { key: k.value }), 401, 'key_revoked');
    expectError(await call(models(), { key: rotated.value }), 401, 'key_revoked');
    const listed = ((await call(keysUrl(), { key: suite.keys.full })).body as { data: KeyWire[] }).data.find((x) => x.id === k.id);
    expect(listed).toMatchObject({ status: 'revoked', previous_value_valid_until: null });
  });

  it('lets a management key revoke itself', async () => {
    const k = await create({ scopes: ['management'] });
    expect((await call(`${keysUrl()}/${k.id}`, { method: 'DELETE', key: k.value })).status).toBe(200);
    expectError(await call(keysUrl(), { key: k.value }), 401, 'key_revoked');
  });

  it('returns 404 api_key_not_found for an unknown key', async () => {
    expectError(await call(`${keysUrl()}/key_nope`, { method: 'DELETE', key: suite.keys.full }), 404, 'api_key_not_found');
  });
});

describe('POST /{project}/v1/management/api-keys/{key_id}/rotate', () => {
  it('returns a new value once; both values work for 24 hours, then the old one gets 401', async () => {
    const k = await create({ allowed_workspace_ids: [WS_B], allowed_ips: ['127.0.0.1'], quota_requests: 1000, quota_window: 120 });
    const rotatedAt = await now();
    const res = await call(`${keysUrl()}/${k.id}/rotate`, { method: 'POST', key: suite.keys.full });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const r = res.body as KeyWire & { value: string };
    expect(r.value).toMatch(/^svc_mgmt_[A-Za-z0-9_-]{43}$/);
    expect(r.value).not.toBe(k.value);
    expect(r.prefix).toBe(r.value.slice(0, k.prefix.length));
    expect(r.prefix).not.toBe(k.prefix);
    // Workspace list, IP filter and quota are kept.
    expect(r).toMatchObject({ id: k.id, status: 'active', allowed_workspace_ids: [WS_B], allowed_ips: ['127.0.0.1'], quota_requests: 1000, quota_window: 120 });
    const graceEnd = r.previous_value_valid_until ?? 0;
    expect(Math.abs(graceEnd - Math.floor((rotatedAt + DAY_MS) / 1000))).toBeLessThanOrEqual(2);
    const listed = ((await call(keysUrl(), { key: suite.keys.full })).body as { data: KeyWire[] }).data.find((x) => x.id === k.id);
    expect(listed).toMatchObject({ prefix: r.prefix, previous_value_valid_until: graceEnd });
    expect(JSON.stringify(listed)).not.toContain(r.value);

    expect(await status(direct('b-only'), k.value)).toBe(200);
    expect(await status(direct('b-only'), r.value)).toBe(200);
    // The kept workspace list still confines the new value.
    expectError(await call(direct('chat'), { key: r.value, headers: { 'x-workspace-id': WS_DEFAULT } }), 403, 'workspace_not_allowed');

    await advanceClock(suite.gw.url, DAY_MS - 60_000);
    expect(await status(direct('b-only'), k.value)).toBe(200);
    await advanceClock(suite.gw.url, 120_000);
    expectError(await call(direct('b-only'), { key: k.value }), 401, 'key_revoked');
    expect(await status(direct('b-only'), r.value)).toBe(200);
    expect(((await call(`${keysUrl()}/${k.id}`, { key: suite.keys.full })).body as KeyWire).previous_value_valid_until).toBeNull();
  });

  it('rotates a key read from the config file, and a second rotation keeps the first grace', async () => {
    const list = ((await call(keysUrl(), { key: suite.keys.full })).body as { data: KeyWire[] }).data;
    const bound = list.find((x) => x.endpoint_id === CHAT_ID && x.source === 'config');
    if (!bound) throw new Error('the endpoint-bound config key is not listed');
    const first = (await call(`${keysUrl()}/${bound.id}/rotate`, { method: 'POST', key: suite.keys.full })).body as KeyWire & { value: string };
    await advanceClock(suite.gw.url, 60 * 60_000);
    const second = (await call(`${keysUrl()}/${bound.id}/rotate`, { method: 'POST', key: suite.keys.full })).body as KeyWire & { value: string };
    for (const v of [suite.keys.endpointBound, first.value, second.value]) expect(await status(direct('chat'), v)).toBe(200);
    expectError(await call(direct('reasoner'), { key: second.value }), 403, 'endpoint_restricted');
    // The original value's grace started at the first rotation: it ends an hour before the first value's.
    await advanceClock(suite.gw.url, DAY_MS - 30 * 60_000);
    expectError(await call(direct('chat'), { key: suite.keys.endpointBound }), 401, 'key_revoked');
    expect(await status(direct('chat'), first.value)).toBe(200);
  });

  // SPEC Authentication 3: scopes change only by rotating with a new scope list.
  it('applies a new scope list given to the rotation, to the new value and to the old one in its grace', async () => {
    const k = await create({ scopes: ['inference'] });
    expectError(await call(keysUrl(), { key: k.value }), 403, 'scope_insufficient');
    const res = await call(`${keysUrl()}/${k.id}/rotate`, { key: suite.keys.full, body: { scopes: ['inference', 'management', 'management'] } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const r = res.body as KeyWire & { value: string };
    expect(r.scopes).toEqual(['inference', 'management']);
    expect(((await call(`${keysUrl()}/${k.id}`, { key: suite.keys.full })).body as KeyWire).scopes).toEqual(['inference', 'management']);
    expect((await call(keysUrl(), { key: r.value })).status).toBe(200);
    expect((await call(keysUrl(), { key: k.value })).status).toBe(200);
    // Narrowing works the same way; an empty body keeps the scopes.
    const narrowed = (await call(`${keysUrl()}/${k.id}/rotate`, { key: suite.keys.full, body: { scopes: ['management'] } })).body as KeyWire & { value: string };
    expect(narrowed.scopes).toEqual(['management']);
    expectError(await call(models(), { key: narrowed.value }), 403, 'scope_insufficient');
    const kept = await call(`${keysUrl()}/${k.id}/rotate`, { method: 'POST', key: suite.keys.full });
    expect((kept.body as KeyWire).scopes).toEqual(['management']);
    const emptyObject = await call(`${keysUrl()}/${k.id}/rotate`, { key: suite.keys.full, body: {} });
    expect((emptyObject.body as KeyWire).scopes).toEqual(['management']);
  });

  it('validates the rotation body like creation, and refuses unknown fields', async () => {
    const k = await create();
    const rotate = (body: unknown): Promise<JsonResponse> => call(`${keysUrl()}/${k.id}/rotate`, { key: suite.keys.full, body: body as object });
    for (const scopes of [['admin'], [], 'inference', [1]]) {
      const onRotate = await rotate({ scopes });
      const onCreate = await call(keysUrl(), { key: suite.keys.full, body: { scopes } });
      expect(onRotate.status).toBe(400);
      expect(onRotate.body).toEqual(onCreate.body);
    }
    expectError(await rotate({ foo: 1 }), 400, 'invalid_request', 'foo');
    expect(((await rotate({ foo: 1 })).body as { error: { message: string } }).error.message).toMatch(/^foo is not a field of this request/);
    expectError(await rotate([]), 400, 'invalid_request');
    // Nothing was rotated by the refusals.
    expect(((await call(`${keysUrl()}/${k.id}`, { key: suite.keys.full })).body as KeyWire).previous_value_valid_until).toBeNull();
    // A confined key never holds management (SPEC Authentication 10), as at creation.
    const confined = await create({ allowed_workspace_ids: [WS_B] });
    expectError(await call(`${keysUrl()}/${confined.id}/rotate`, { key: suite.keys.full, body: { scopes: ['management'] } }), 400, 'invalid_request', 'scopes');
  });

  it('refuses to rotate an unknown key', async () => {
    expectError(await call(`${keysUrl()}/key_nope/rotate`, { method: 'POST', key: suite.keys.full }), 404, 'api_key_not_found');
  });
});

describe('expiry', () => {
  it('treats a key past expires_at as revoked: 401 key_expired, listed as expired, not rotatable', async () => {
    const at = Math.floor((await now()) / 1000) + 3600;
    const k = await create({ expires_at: at });
    expect(await status(models(), k.value)).toBe(200);
    await advanceClock(suite.gw.url, 3601_000);
    expectError(await call(models(), { key: k.value }), 401, 'key_expired');
    expect(((await call(`${keysUrl()}/${k.id}`, { key: suite.keys.full })).body as KeyWire).status).toBe('expired');
    expectError(await call(`${keysUrl()}/${k.id}/rotate`, { method: 'POST', key: suite.keys.full }), 409, 'invalid_state');
  });
});

describe('durability', () => {
  // Its own gateway: the suite's clock has moved days ahead, and a restarted process starts again from
  // the real time, which would put revocations and rotations in its future.
  it('keeps created, revoked and rotated keys across a restart', async () => {
    let fresh = await startGatewayProcess(suite.config);
    try {
      const make = async (body: Record<string, unknown>) => (await call(keysUrl(fresh.url), { key: suite.keys.full, body })).body as KeyWire & { value: string };
      const kept = await make({ name: 'kept', quota_requests: 7 });
      const revoked = await make({ name: 'revoked' });
      const rotated = await make({ name: 'rotated' });
      expect((await call(`${keysUrl(fresh.url)}/${revoked.id}`, { method: 'DELETE', key: suite.keys.full })).status).toBe(200);
      const newValue = ((await call(`${keysUrl(fresh.url)}/${rotated.id}/rotate`, { method: 'POST', key: suite.keys.full })).body as { value: string }).value;
      // A bootstrap key revoked through the API stays revoked, whatever the file says at the next start.
      const listed = ((await call(keysUrl(fresh.url), { key: suite.keys.full })).body as { data: KeyWire[] }).data;
      const fromFile = listed.find((x) => x.source === 'config' && x.prefix === suite.keys.ipAllowed.slice(0, 'svc_test_'.length + 4));
      expect((await call(`${keysUrl(fresh.url)}/${fromFile?.id ?? ''}`, { method: 'DELETE', key: suite.keys.full })).status).toBe(200);
      const before = (await call(keysUrl(fresh.url), { key: suite.keys.full })).body as { data: KeyWire[] };

      expect(await fresh.stop()).toBe(0);
      fresh = await startGatewayProcess(suite.config, { dbPath: fresh.dbPath });

      const res: JsonResponse = await call(models(fresh.url), { key: kept.value });
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-limit')).toBe('7');
      expectError(await call(models(fresh.url), { key: revoked.value }), 401, 'key_revoked');
      expect(await status(models(fresh.url), newValue)).toBe(200);
      expect(await status(models(fresh.url), rotated.value)).toBe(200);
      expectError(await call(models(fresh.url), { key: suite.keys.ipAllowed }), 401, 'key_revoked');
      const after = (await call(keysUrl(fresh.url), { key: suite.keys.full })).body as { data: KeyWire[] };
      expect(after.data).toEqual(before.data);
    } finally {
      await fresh.stop();
    }
  });
});
