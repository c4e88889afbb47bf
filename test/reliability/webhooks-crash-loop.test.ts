/**
 * Issue 17's crash loop: 1,000 webhook deliveries pending, the gateway SIGKILLed 20 times while it works
 * through them (each time after the receiver has seen 30 more requests, so every kill lands mid-delivery),
 * then started once more. Every event is delivered; deliveries are at least once (SPEC Events), so a kill
 * between the receiver's answer and the recorded outcome sends that delivery again: duplicates are counted
 * and reported, and each must be a repeat of the same delivery id and event id, never a new one.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { call } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, tempDir, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const EVENTS = 1000;
const KILLS = 20;
const PER_LIFE = 30;

let sim: SimulatorProcess;
let keys: TestKeys;
let receiver: Receiver;
const processes: GatewayProcess[] = [];

beforeAll(async () => {
  keys = makeKeys();
  sim = await startSimulatorProcess();
  receiver = await startReceiver();
  // Some milliseconds an answer, so that deliveries are in flight when the kill comes.
  receiver.respond(() => ({ status: 200, body: 'ok', delayMs: 10 }));
});

afterAll(async () => {
  for (const p of processes) await p.stop();
  await receiver?.close();
  await sim?.stop();
});

describe(`${KILLS} SIGKILLs with ${EVENTS} webhook deliveries pending`, () => {
  it('delivers every event; repeats are only resends of the same delivery (counted and reported)', { timeout: 300_000 }, async () => {
    const dir = tempDir();
    const dbPath = join(dir, 'loop.db');
    const config = testConfig(sim.url, keys, {
      security: { allow_private_targets: true, allow_http_targets: true },
      testing: { event_injection: true },
      // Two in flight: each life delivers little beyond its 30, so the 1,000 last through all 20 kills (at
      // the default 16 in flight a fast run delivered them all before the 20th and waited for 30 that never came).
      webhooks: { attempt_timeout_ms: 20_000, poll_interval_ms: 20, per_endpoint_in_flight: 2 },
    });
    const start = async (): Promise<GatewayProcess> => {
      const gw = await startGatewayProcess(config, { dir, dbPath });
      processes.push(gw);
      return gw;
    };

    const first = await start();
    const hook = await call(`${first.url}/${PROJECT}/v1/webhooks`, { key: keys.full, body: { url: receiver.url, events: ['exec.completed'] } });
    expect(hook.status).toBe(201);
    expect((await call(`${first.url}/__test/webhook-events`, { body: { project: PROJECT, type: 'exec.completed', count: EVENTS } })).body).toEqual({ queued: EVENTS });

    let gw = first;
    let kills = 0;
    for (; kills < KILLS; kills += 1) {
      const seen = receiver.received.length;
      if (new Set(receiver.received.map((d) => String(d.body.id))).size === EVENTS) break;
      await receiver.waitFor(seen + PER_LIFE, 30_000);
      expect(await gw.stop('SIGKILL')).toBe('SIGKILL');
      gw = await start();
    }
    expect(kills).toBe(KILLS);

    const deadline = Date.now() + 60_000;
    while (new Set(receiver.received.map((d) => String(d.body.id))).size < EVENTS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));

    const byEvent = new Map<string, Set<string>>();
    for (const d of receiver.received) {
      const event = String(d.body.id);
      const deliveries = byEvent.get(event) ?? new Set<string>();
      deliveries.add(String(d.headers['x-webhook-id']));
      byEvent.set(event, deliveries);
    }
    const duplicates = receiver.received.length - byEvent.size;
    const report = { events: EVENTS, kills, requests: receiver.received.length, delivered: byEvent.size, duplicates };
    mkdirSync('test-artifacts', { recursive: true });
    writeFileSync(join('test-artifacts', 'webhooks-crash-loop.json'), `${JSON.stringify(report, null, 2)}\n`);
    console.log(`webhooks crash loop: ${JSON.stringify(report)}`);

    expect(byEvent.size).toBe(EVENTS);
    // A repeat is the same delivery sent again (same x-webhook-id), never a second delivery of one event.
    expect([...byEvent.values()].filter((ids) => ids.size !== 1)).toEqual([]);
  });
});
