/**
 * The retry schedule against a real process with the controllable clock (SPEC Events 4, "Webhook
 * delivery" states): after a failure the next attempt is due 1 min, 5 min, 15 min, 1 h, 4 h later; the
 * sixth failure is permanent. Time is moved on a frozen clock, never waited for: "not yet" is checked
 * once the dispatcher has worked an event emitted after the clock moved (the canary), which it claims
 * after any due retry, oldest due first.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT } from '../helpers/configs.js';
import { advanceClock, call } from '../helpers/http.js';
import { useGatewaySuite } from '../helpers/suite.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const POLL_MS = 40;
const suite = useGatewaySuite({
  security: { allow_private_targets: true, allow_http_targets: true },
  testing: { event_injection: true },
  webhooks: { attempt_timeout_ms: 1000, poll_interval_ms: POLL_MS },
});

const receivers: Receiver[] = [];
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
});

const CANARY_TYPE = 'batch.completed';
let canary: Receiver;
beforeAll(async () => {
  await advanceClock(suite.gw.url, 0, true);
  canary = await startReceiver();
  receivers.push(canary);
  const res = await call(`${suite.gw.url}/${PROJECT}/v1/webhooks`, { key: suite.keys.full, body: { url: canary.url, events: [CANARY_TYPE] } });
  expect(res.status).toBe(201);
});

async function emit(type: string): Promise<void> {
  const emitted = await call(`${suite.gw.url}/__test/webhook-events`, { body: { project: PROJECT, type } });
  expect(emitted.body).toEqual({ queued: 1 });
}

type Delivery = { id: string; status: string; attempt_count: number; http_status: number | null; response_body: string | null };

async function setUp(type: string): Promise<{ r: Receiver; webhookId: string }> {
  const r = await startReceiver();
  receivers.push(r);
  const res = await call(`${suite.gw.url}/${PROJECT}/v1/webhooks`, { key: suite.keys.full, body: { url: r.url, events: [type] } });
  expect(res.status).toBe(201);
  await emit(type);
  return { r, webhookId: (res.body as { id: string }).id };
}

async function delivery(webhookId: string, check: (d: Delivery) => boolean): Promise<Delivery> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const res = await call(`${suite.gw.url}/${PROJECT}/v1/webhooks/${webhookId}/deliveries`, { key: suite.keys.full });
    const d = (res.body as { data: Delivery[] }).data[0];
    if (d && check(d)) return d;
    if (Date.now() > deadline) throw new Error(`delivery never matched: ${JSON.stringify(d)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The canary, due now, has been delivered, and the receiver still has `count` requests: nothing else was due. */
async function stillAt(r: Receiver, count: number): Promise<void> {
  const seen = canary.received.length;
  await emit(CANARY_TYPE);
  await canary.waitFor(seen + 1);
  expect(r.received).toHaveLength(count);
}

describe('retries', () => {
  it('retries after 1 minute, then after 5 minutes, and records the success with its attempt count', async () => {
    const { r, webhookId } = await setUp('exec.failed');
    r.respond((n) => (n < 2 ? { status: 500, body: `failure ${n + 1}` } : { status: 200, body: 'finally' }));
    await r.waitFor(1);
    expect(await delivery(webhookId, (d) => d.attempt_count === 1)).toMatchObject({ status: 'pending', http_status: 500, response_body: 'failure 1' });

    await advanceClock(suite.gw.url, 59_000);
    await stillAt(r, 1);
    await advanceClock(suite.gw.url, 1_000);
    await r.waitFor(2);
    expect(await delivery(webhookId, (d) => d.attempt_count === 2)).toMatchObject({ status: 'pending', http_status: 500, response_body: 'failure 2' });

    await advanceClock(suite.gw.url, 299_000);
    await stillAt(r, 2);
    await advanceClock(suite.gw.url, 1_000);
    await r.waitFor(3);
    expect(await delivery(webhookId, (d) => d.status === 'delivered')).toMatchObject({ http_status: 200, response_body: 'finally', attempt_count: 3 });

    // Every attempt is the same delivery of the same event: same X-Webhook-ID, same body bytes, re-signed.
    const ids = new Set(r.received.map((d) => d.headers['x-webhook-id']));
    const bodies = new Set(r.received.map((d) => d.rawBody.toString()));
    expect({ ids: ids.size, bodies: bodies.size }).toEqual({ ids: 1, bodies: 1 });
    expect(new Set(r.received.map((d) => d.headers['x-webhook-timestamp'])).size).toBe(3);
  });

  it('makes 6 attempts on the 1 min / 5 min / 15 min / 1 h / 4 h schedule, then fails permanently', async () => {
    const { r, webhookId } = await setUp('exec.timeout');
    r.respond(() => ({ status: 503, body: 'down' }));
    await r.waitFor(1);
    const schedule = [60_000, 300_000, 900_000, 3_600_000, 14_400_000];
    for (const [i, delay] of schedule.entries()) {
      await delivery(webhookId, (d) => d.attempt_count === i + 1);
      await advanceClock(suite.gw.url, delay - 1_000);
      await stillAt(r, i + 1);
      await advanceClock(suite.gw.url, 1_000);
      await r.waitFor(i + 2);
    }
    expect(await delivery(webhookId, (d) => d.status === 'failed')).toMatchObject({ attempt_count: 6, http_status: 503 });
    await advanceClock(suite.gw.url, 24 * 3_600_000);
    await stillAt(r, 6);
  });
});
