/**
 * At least once across a crash (SPEC Events 5): the gateway is killed with SIGKILL while deliveries are
 * in flight (the receiver holds them) and while others wait for their first retry. On restart over the
 * same store, the in-flight ones are sent again at once, as the same deliveries of the same events, and
 * the waiting ones keep their schedule: not before their retry time, promptly after it.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { advanceClock, call } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, tempDir, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

let sim: SimulatorProcess;
let keys: TestKeys;
let dir: string;
let config: ReturnType<typeof testConfig>;
const processes: GatewayProcess[] = [];
const receivers: Receiver[] = [];

beforeAll(async () => {
  keys = makeKeys();
  sim = await startSimulatorProcess();
  dir = tempDir();
  config = testConfig(sim.url, keys, {
    security: { allow_private_targets: true, allow_http_targets: true },
    testing: { event_injection: true },
    webhooks: { attempt_timeout_ms: 20_000, poll_interval_ms: 40 },
  });
});

afterAll(async () => {
  for (const p of processes) await p.stop();
  await Promise.all(receivers.map((r) => r.close()));
  await sim?.stop();
});

async function gateway(): Promise<GatewayProcess> {
  const gw = await startGatewayProcess(config, { dir, dbPath: join(dir, 'crash.db') });
  processes.push(gw);
  return gw;
}

type Delivery = { id: string; status: string; attempt_count: number };

async function deliveries(gw: GatewayProcess, webhookId: string): Promise<Delivery[]> {
  const res = await call(`${gw.url}/${PROJECT}/v1/webhooks/${webhookId}/deliveries?limit=100`, { key: keys.full });
  return (res.body as { data: Delivery[] }).data;
}

async function until<T>(read: () => Promise<T>, check: (v: T) => boolean, timeoutMs = 8000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (check(v)) return v;
    if (Date.now() > deadline) throw new Error(`never happened: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('kill -9 of the gateway', () => {
  it('loses no delivery that was in flight or waiting for a retry', async () => {
    const holding = await startReceiver();
    const failing = await startReceiver();
    receivers.push(holding, failing);
    // Before the crash: `holding` keeps every request open; `failing` answers 500.
    holding.respond(() => ({ status: 200, delayMs: 60_000 }));
    failing.respond(() => ({ status: 500, body: 'not now' }));

    const gw1 = await gateway();
    const subscribe = async (url: string, type: string): Promise<string> => {
      const res = await call(`${gw1.url}/${PROJECT}/v1/webhooks`, { key: keys.full, body: { url, events: [type] } });
      expect(res.status).toBe(201);
      return (res.body as { id: string }).id;
    };
    const inFlightHook = await subscribe(holding.url, 'exec.completed');
    const retryHook = await subscribe(failing.url, 'exec.failed');
    const emit = (type: string, count: number) => call(`${gw1.url}/__test/webhook-events`, { body: { project: PROJECT, type, count } });
    expect((await emit('exec.completed', 5)).body).toEqual({ queued: 5 });
    expect((await emit('exec.failed', 3)).body).toEqual({ queued: 3 });

    const firstTries = await holding.waitFor(5);
    await failing.waitFor(3);
    await until(() => deliveries(gw1, retryHook), (list) => list.length === 3 && list.every((d) => d.attempt_count === 1));
    expect((await deliveries(gw1, inFlightHook)).map((d) => d.status)).toEqual(['pending', 'pending', 'pending', 'pending', 'pending']);

    expect(await gw1.stop('SIGKILL')).toBe('SIGKILL');

    // After the crash both receivers answer 200 at once.
    holding.respond(() => ({ status: 200, body: 'ok' }));
    failing.respond(() => ({ status: 200, body: 'ok' }));
    const gw2 = await gateway();

    // In flight at the crash: sent again at once, same delivery ids and event ids (receivers dedupe on them).
    const again = (await holding.waitFor(10)).slice(5);
    const key = (d: (typeof again)[number]) => `${String(d.headers['x-webhook-id'])} ${String(d.body.id)}`;
    expect(again.map(key).sort()).toEqual(firstTries.map(key).sort());
    const done = await until(() => deliveries(gw2, inFlightHook), (list) => list.every((d) => d.status === 'delivered'));
    // The lost attempt's outcome was never recorded, so it does not count.
    expect(done.map((d) => d.attempt_count)).toEqual([1, 1, 1, 1, 1]);

    // Waiting for their first retry (due 60 s after the failure): not before, promptly after. "Not before":
    // an event emitted now, claimed after anything already due (oldest due first), has been delivered.
    expect((await call(`${gw2.url}/__test/webhook-events`, { body: { project: PROJECT, type: 'exec.completed' } })).body).toEqual({ queued: 1 });
    await holding.waitFor(11);
    expect(failing.received).toHaveLength(3);
    await advanceClock(gw2.url, 60_000);
    await failing.waitFor(6);
    const retried = await until(() => deliveries(gw2, retryHook), (list) => list.every((d) => d.status === 'delivered'));
    expect(retried.map((d) => d.attempt_count)).toEqual([2, 2, 2]);
    expect(holding.received).toHaveLength(11);
  });
});
