/**
 * Webhook deliveries end to end (SPEC "Events" delivery contract): events emitted into the outbox reach
 * a real local receiver, signed; the receiver verifies each one with the exported verify function. The
 * gateway may reach 127.0.0.1 over plain HTTP here (security.allow_* are on, testing only); the HTTPS
 * suite at the end uses a self-signed certificate and keeps plain HTTP refused.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../src/webhooks-verify.js';
import { CHAT_ID, makeKeys, PROJECT, testConfig } from '../helpers/configs.js';
import { advanceClock, call, expectError } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, tempDir } from '../helpers/processes.js';
import { useGatewaySuite } from '../helpers/suite.js';
import { makeSelfSignedCert, startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const suite = useGatewaySuite({
  security: { allow_private_targets: true, allow_http_targets: true },
  testing: { event_injection: true },
  webhooks: { attempt_timeout_ms: 1000, poll_interval_ms: 50 },
});

const receivers: Receiver[] = [];
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
});

// Control-plane routes share 60 requests a minute per project: each test starts a fresh window.
beforeEach(async () => {
  await advanceClock(suite.gw.url, 61_000);
});

const hooks = (): string => `${suite.gw.url}/${PROJECT}/v1/webhooks`;
type Endpoint = { id: string; secret: string };
type Delivery = { id: string; object: string; event_type: string; http_status: number | null; response_body: string | null; status: string; attempt_count: number; created_at: number };

async function receiver(): Promise<Receiver> {
  const r = await startReceiver();
  receivers.push(r);
  return r;
}

async function subscribe(url: string, events: string[]): Promise<Endpoint> {
  const res = await call(hooks(), { key: suite.keys.full, body: { url, events } });
  expect(res.status).toBe(201);
  return res.body as Endpoint;
}

async function emit(type: string, data: object = {}, count = 1): Promise<number> {
  const res = await call(`${suite.gw.url}/__test/webhook-events`, { body: { project: PROJECT, type, data, count } });
  expect(res.status).toBe(200);
  return (res.body as { queued: number }).queued;
}

async function deliveries(id: string): Promise<Delivery[]> {
  const res = await call(`${hooks()}/${id}/deliveries?limit=100`, { key: suite.keys.full });
  expect(res.status).toBe(200);
  return (res.body as { data: Delivery[] }).data;
}

/**
 * Polls the deliveries listing until `check` holds (outcomes are written in small batches). Every poll is
 * a control-plane request: at 100 ms apart, the 5 s wait stays under the project's 60 a minute however
 * slowly the outcome comes (at 25 ms a slow machine ran into 429).
 */
async function deliveriesWhen(id: string, check: (d: Delivery[]) => boolean, timeoutMs = 5000): Promise<Delivery[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const list = await deliveries(id);
    if (check(list)) return list;
    if (Date.now() > deadline) throw new Error(`deliveries never matched: ${JSON.stringify(list)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The gateway's clock (it moves in these tests), in Unix seconds: what signatures are checked against. */
async function gatewayNow(): Promise<number> {
  return Math.floor((await advanceClock(suite.gw.url, 0)) / 1000);
}

describe('event delivery', () => {
  it('POSTs the signed envelope with the four headers, and the receiver verifies it', async () => {
    const r = await receiver();
    const w = await subscribe(r.url, ['exec.completed']);
    expect(await emit('exec.completed', { invocation_id: 'inv_1', status: 'success', duration_ms: 12, exit_code: 0, completed_at: '2026-01-01T00:00:00Z' })).toBe(1);
    const [got] = await r.waitFor(1);
    expect(got?.headers['content-type']).toBe('application/json');
    expect(got?.headers['x-webhook-id']).toMatch(/^del_[0-9a-f]{24}$/);
    expect(got?.headers['x-webhook-timestamp']).toMatch(/^\d+$/);
    expect(got?.headers['x-webhook-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(verifyWebhook(w.secret, got?.rawBody ?? '', got?.headers ?? {}, { now: await gatewayNow() })).toMatchObject({ ok: true });
    expect(verifyWebhook('whsec_wrong', got?.rawBody ?? '', got?.headers ?? {}, { now: await gatewayNow() })).toMatchObject({ ok: false, reason: 'signature_mismatch' });
    const body = got?.body ?? {};
    expect(Object.keys(body)).toEqual(['id', 'object', 'type', 'created_at', 'data']);
    expect(body).toMatchObject({ object: 'event', type: 'exec.completed', data: { invocation_id: 'inv_1', exit_code: 0 } });
    expect(body.id).toMatch(/^evt_[0-9a-f]{24}$/);
    expect(JSON.stringify(body)).not.toContain(PROJECT);
  });

  it('records the delivery: delivered, one attempt, the receiver\'s status and body, id = X-Webhook-ID', async () => {
    const r = await receiver();
    r.respond(() => ({ status: 202, body: 'accepted' }));
    const w = await subscribe(r.url, ['file.uploaded']);
    await emit('file.uploaded', { file_id: 'file_1' });
    const [got] = await r.waitFor(1);
    const [d] = await deliveriesWhen(w.id, (list) => list[0]?.status === 'delivered');
    expect(Object.keys(d ?? {})).toEqual(['id', 'object', 'event_type', 'http_status', 'response_body', 'status', 'attempt_count', 'created_at']);
    expect(d).toMatchObject({ id: got?.headers['x-webhook-id'], object: 'webhook_delivery', event_type: 'file.uploaded', http_status: 202, response_body: 'accepted', status: 'delivered', attempt_count: 1 });
  });

  it('delivers one event to every active subscriber of its type, under one envelope id and distinct delivery ids', async () => {
    const [a, b, c] = [await receiver(), await receiver(), await receiver()];
    await subscribe(a.url, ['conversation.created']);
    await subscribe(b.url, ['conversation.deleted', 'conversation.created']);
    const onlyDeleted = await subscribe(c.url, ['conversation.deleted']);
    expect(await emit('conversation.created', { conversation_id: 'conv_1' })).toBe(2);
    const [[fromA], [fromB]] = [await a.waitFor(1), await b.waitFor(1)];
    expect(fromA?.body.id).toBe(fromB?.body.id);
    expect(fromA?.headers['x-webhook-id']).not.toBe(fromB?.headers['x-webhook-id']);
    // The fan-out happens at emission: C got no delivery row, and the first event it does get is a later one.
    expect(await deliveries(onlyDeleted.id)).toEqual([]);
    expect(await emit('conversation.deleted', { conversation_id: 'conv_1' })).toBe(2);
    expect((await c.waitFor(1)).map((d) => d.body.type)).toEqual(['conversation.deleted']);
  });

  it('queues nothing for an inactive endpoint or a reserved type', async () => {
    const r = await receiver();
    const w = await subscribe(r.url, ['exec.ambiguous', 'response.failed']);
    expect(await emit('exec.ambiguous')).toBe(0);
    await call(`${hooks()}/${w.id}`, { key: suite.keys.full, method: 'PUT', body: { is_active: false } });
    expect(await emit('response.failed')).toBe(0);
    await call(`${hooks()}/${w.id}`, { key: suite.keys.full, method: 'PUT', body: { is_active: true } });
    expect(await emit('response.failed')).toBe(1);
    await r.waitFor(1);
    // Nothing else was queued for it: the one row is this delivery, settled.
    const [only, ...others] = await deliveriesWhen(w.id, (list) => list.every((d) => d.status === 'delivered'));
    expect({ type: only?.event_type, others: others.length }).toEqual({ type: 'response.failed', others: 0 });
    expect(r.received.map((d) => d.body.type)).toEqual(['response.failed']);
  });

  it('keeps the first 1 KiB of a long response body', async () => {
    const r = await receiver();
    r.respond(() => ({ status: 200, body: 'x'.repeat(5000) }));
    const w = await subscribe(r.url, ['batch.completed']);
    await emit('batch.completed');
    const [d] = await deliveriesWhen(w.id, (list) => list[0]?.status === 'delivered');
    expect(d?.response_body).toBe('x'.repeat(1024));
  });

  it('counts a redirect as a failed attempt and does not follow it', async () => {
    const [r, elsewhere] = [await receiver(), await receiver()];
    r.respond(() => ({ status: 307, body: elsewhere.url }));
    const w = await subscribe(r.url, ['batch.failed']);
    await emit('batch.failed');
    const [d] = await deliveriesWhen(w.id, (list) => list[0]?.attempt_count === 1);
    expect(d).toMatchObject({ status: 'pending', http_status: 307, attempt_count: 1 });
    expect(elsewhere.received).toHaveLength(0);
  });

  it('counts a receiver slower than the attempt timeout as a failed attempt with no status', async () => {
    const r = await receiver();
    r.respond(() => ({ status: 200, delayMs: 1500 }));
    const w = await subscribe(r.url, ['batch.cancelled']);
    await emit('batch.cancelled');
    const [d] = await deliveriesWhen(w.id, (list) => list[0]?.attempt_count === 1);
    expect(d).toMatchObject({ status: 'pending', http_status: null, response_body: null, attempt_count: 1 });
  });

  it('deletes an endpoint\'s delivery records with it', async () => {
    const r = await receiver();
    const w = await subscribe(r.url, ['file.deleted']);
    await emit('file.deleted', {}, 3);
    await deliveriesWhen(w.id, (list) => list.length === 3 && list.every((d) => d.status === 'delivered'));
    const db = new Database(suite.gw.dbPath, { readonly: true });
    const count = (): number => (db.prepare('SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = ?').get(w.id) as { n: number }).n;
    expect(count()).toBe(3);
    expect((await call(`${hooks()}/${w.id}`, { key: suite.keys.full, method: 'DELETE' })).status).toBe(200);
    expect(count()).toBe(0);
    db.close();
  });

  it('pages deliveries newest first', async () => {
    const r = await receiver();
    const w = await subscribe(r.url, ['agent.created']);
    await emit('agent.created', {}, 3);
    const all = await deliveriesWhen(w.id, (list) => list.length === 3);
    const first = (await call(`${hooks()}/${w.id}/deliveries?limit=2`, { key: suite.keys.full })).body as { data: Delivery[]; has_more: boolean };
    expect(first.data.map((d) => d.id)).toEqual(all.slice(0, 2).map((d) => d.id));
    expect(first.has_more).toBe(true);
    const rest = (await call(`${hooks()}/${w.id}/deliveries?after=${all[1]?.id}`, { key: suite.keys.full })).body as { data: Delivery[]; has_more: boolean };
    expect(rest).toMatchObject({ data: [{ id: all[2]?.id }], has_more: false });
  });

  it('sends a budget alert as the legacy flat body when an endpoint budget crosses its warning threshold', async () => {
    const r = await receiver();
    const w = await subscribe(r.url, ['budget.threshold_reached']);
    const put = await call(`${suite.gw.url}/${PROJECT}/v1/management/budgets/endpoints/${CHAT_ID}`, { key: suite.keys.full, method: 'PUT', body: { hard_cap_tokens: 40 } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    for (let i = 0; i < 4 && r.received.length === 0; i += 1) {
      await call(`${suite.gw.url}/${PROJECT}/chat/v1/chat/completions`, { key: suite.keys.full, body: { model: 'x', messages: [{ role: 'user', content: 'hello there' }] } });
      await new Promise((res) => setTimeout(res, 150));
    }
    const [got] = await r.waitFor(1);
    expect(Object.keys(got?.body ?? {}).sort()).toEqual(
      ['alertId', 'alertName', 'budgetAmountCents', 'currentSpendCents', 'eventType', 'projectId', 'projectName', 'spendPercentage', 'threshold', 'timestamp'].sort(),
    );
    expect(got?.body).toMatchObject({ eventType: 'budget.threshold_reached', projectId: PROJECT, threshold: 80, budgetAmountCents: 40 });
    expect(verifyWebhook(w.secret, got?.rawBody ?? '', got?.headers ?? {}, { now: await gatewayNow() }).ok).toBe(true);
  });
});

describe('POST /v1/webhooks/{id}/test', () => {
  const test = (id: string) => call(`${hooks()}/${id}/test`, { key: suite.keys.full, method: 'POST' });

  it('sends a signed synthetic event and reports success', async () => {
    const r = await receiver();
    r.respond(() => ({ status: 200, body: 'got it' }));
    const w = await subscribe(r.url, ['exec.completed']);
    const res = await test(w.id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, http_status: 200, response_body: 'got it', error_message: null });
    const [got] = r.received;
    expect(got?.body).toMatchObject({ object: 'event', type: 'webhook.test', data: { webhook_id: w.id } });
    expect(verifyWebhook(w.secret, got?.rawBody ?? '', got?.headers ?? {}, { now: await gatewayNow() }).ok).toBe(true);
  });

  it('reports a non-2xx answer with its status, body and an error message, and records nothing', async () => {
    const r = await receiver();
    r.respond(() => ({ status: 500, body: 'boom' }));
    const w = await subscribe(r.url, ['exec.completed']);
    const res = await test(w.id);
    expect(res.body).toEqual({ success: false, http_status: 500, response_body: 'boom', error_message: 'the receiver answered HTTP 500' });
    expect(await deliveries(w.id)).toEqual([]);
  });

  it('reports an unreachable receiver with a null status', async () => {
    const r = await receiver();
    const w = await subscribe(r.url, ['exec.completed']);
    await r.close();
    const res = await test(w.id);
    expect(res.body).toMatchObject({ success: false, http_status: null, response_body: null });
    expect((res.body as { error_message: string }).error_message).toMatch(/ECONNREFUSED/);
  });

  it('allows 10 tests per webhook per hour, then answers 429 webhook_test_limit_exceeded with Retry-After', async () => {
    const r = await receiver();
    const w = await subscribe(r.url, ['exec.completed']);
    for (let i = 0; i < 10; i += 1) expect((await test(w.id)).status).toBe(200);
    const refused = await test(w.id);
    expectError(refused, 429, 'webhook_test_limit_exceeded');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(3000);
    expect((refused.body as { error: { retry_after: number } }).error.retry_after).toBe(Number(refused.headers.get('retry-after')));
    expect(r.received).toHaveLength(10);
    await advanceClock(suite.gw.url, 3_600_000);
    expect((await test(w.id)).status).toBe(200);
  });
});

describe('over HTTPS with a self-signed certificate', () => {
  it('delivers to an https receiver the gateway trusts, and still refuses plain http', async () => {
    const dir = tempDir();
    const cert = makeSelfSignedCert(dir);
    const r = await startReceiver({ tls: cert });
    receivers.push(r);
    const keys = makeKeys();
    const sim = await startSimulatorProcess();
    const gw = await startGatewayProcess(
      testConfig(sim.url, keys, { security: { allow_private_targets: true }, testing: { event_injection: true }, webhooks: { poll_interval_ms: 50 } }),
      { dir, dbPath: join(dir, 'https.db'), env: { NODE_EXTRA_CA_CERTS: cert.certFile } },
    );
    try {
      const plain = await call(`${gw.url}/${PROJECT}/v1/webhooks`, { key: keys.full, body: { url: 'http://127.0.0.1:9/hooks', events: ['exec.failed'] } });
      expectError(plain, 400, 'url_not_allowed', 'url');
      const created = await call(`${gw.url}/${PROJECT}/v1/webhooks`, { key: keys.full, body: { url: r.url, events: ['exec.failed'] } });
      expect(created.status).toBe(201);
      const w = created.body as Endpoint;
      await call(`${gw.url}/__test/webhook-events`, { body: { project: PROJECT, type: 'exec.failed', data: { invocation_id: 'inv_9' } } });
      const [got] = await r.waitFor(1);
      expect(r.url.startsWith('https://')).toBe(true);
      expect(verifyWebhook(w.secret, got?.rawBody ?? '', got?.headers ?? {}).ok).toBe(true);
      expect(got?.body).toMatchObject({ type: 'exec.failed', data: { invocation_id: 'inv_9' } });
    } finally {
      await gw.stop();
      await sim.stop();
    }
  });
});
