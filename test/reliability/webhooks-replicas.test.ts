/**
 * Issue 12, "Webhook delivery with N replicas": three gateway processes on one SQLite file work through
 * 1,000 pending deliveries to one receiver, and one of them is SIGKILLed mid-run. Each due delivery is
 * claimed by exactly one replica (a lease in the store, store/webhooks/webhook-delivery-queue.ts), and what the
 * killed one had claimed is given back and sent by the others. Every event is delivered; at least once
 * allows repeats only of deliveries the killed replica held (a delivery the receiver answered but whose
 * outcome the replica never recorded), so duplicates are counted, reported, and bounded by what one
 * replica may hold (2 x per_endpoint_in_flight), and each is the same delivery id sent again.
 *
 * The instance lease is shortened to 5 s through SWITCHBOARD_INSTANCE_LEASE_MS (heartbeats every 1.7 s);
 * on one machine the killed replica is seen dead at the survivors' next beat through its pid. A live
 * replica whose event loop stalls past the lease on a loaded machine is judged dead too, and its claims
 * are then sent again: the report counts those verdicts (`judged_dead`) beside the duplicates.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { call } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, tempDir, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const EVENTS = 1000;
const REPLICAS = 3;
const PER_ENDPOINT_IN_FLIGHT = 16;
const LEASE_ENV = { SWITCHBOARD_INSTANCE_LEASE_MS: '5000' };

let sim: SimulatorProcess;
let keys: TestKeys;
let receiver: Receiver;
const processes: GatewayProcess[] = [];

beforeAll(async () => {
  keys = makeKeys();
  sim = await startSimulatorProcess();
  receiver = await startReceiver();
  // Long enough an answer that every replica has requests open when the kill comes.
  receiver.respond(() => ({ status: 200, body: 'ok', delayMs: 20 }));
});

afterAll(async () => {
  for (const p of processes) await p.stop();
  await receiver?.close();
  await sim?.stop();
});

const distinctEvents = (): number => new Set(receiver.received.map((d) => String(d.body.id))).size;
const sentBy = (gw: GatewayProcess): number => gw.stdout.join('').split('webhooks: delivery attempt succeeded').length - 1;
const judgedDead = (gw: GatewayProcess): number => gw.stdout.join('').split('had been judged dead').length - 1;

describe(`${REPLICAS} replicas on one store with ${EVENTS} webhook deliveries pending, one SIGKILLed mid-run`, () => {
  it('delivers every event, each claimed by one replica; repeats are only resends of the killed replica\'s claims', { timeout: 60_000 }, async () => {
    const dir = tempDir();
    const dbPath = join(dir, 'replicas.db');
    const config = testConfig(sim.url, keys, {
      security: { allow_private_targets: true, allow_http_targets: true },
      testing: { event_injection: true },
      webhooks: { attempt_timeout_ms: 10_000, poll_interval_ms: 20, per_endpoint_in_flight: PER_ENDPOINT_IN_FLIGHT },
    });
    const replicas = await Promise.all(Array.from({ length: REPLICAS }, () => startGatewayProcess(config, { dir, dbPath, env: LEASE_ENV })));
    processes.push(...replicas);
    const [victim, survivor] = replicas as [GatewayProcess, GatewayProcess, GatewayProcess];
    const started = Date.now();

    const hook = await call(`${survivor.url}/${PROJECT}/v1/webhooks`, { key: keys.full, body: { url: receiver.url, events: ['exec.completed'] } });
    expect(hook.status).toBe(201);
    const emitted = await call(`${survivor.url}/__test/webhook-events`, { body: { project: PROJECT, type: 'exec.completed', count: EVENTS } });
    expect(emitted.body).toEqual({ queued: EVENTS });

    // Mid-run, with the victim sending: it has delivered some, and holds claims.
    await receiver.waitFor(EVENTS / 4, 20_000);
    const deadline = Date.now() + 10_000;
    while (sentBy(victim) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(await victim.stop('SIGKILL')).toBe('SIGKILL');
    const killedAt = receiver.received.length;

    const end = Date.now() + 30_000;
    while (distinctEvents() < EVENTS && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    const elapsedMs = Date.now() - started;

    const byEvent = new Map<string, Set<string>>();
    const byDelivery = new Map<string, number>();
    for (const d of receiver.received) {
      const event = String(d.body.id);
      const delivery = String(d.headers['x-webhook-id']);
      byEvent.set(event, (byEvent.get(event) ?? new Set<string>()).add(delivery));
      byDelivery.set(delivery, (byDelivery.get(delivery) ?? 0) + 1);
    }
    const duplicates = receiver.received.length - byEvent.size;
    const report = {
      events: EVENTS,
      replicas: REPLICAS,
      requests: receiver.received.length,
      delivered: byEvent.size,
      duplicates,
      requests_before_kill: killedAt,
      sent_by_replica: replicas.map(sentBy),
      judged_dead: replicas.map(judgedDead),
      elapsed_ms: elapsedMs,
    };
    mkdirSync('test-artifacts', { recursive: true });
    writeFileSync(join('test-artifacts', 'webhooks-replicas.json'), `${JSON.stringify(report, null, 2)}\n`);
    console.log(`webhooks replicas: ${JSON.stringify(report)}`);

    expect(byEvent.size).toBe(EVENTS);
    // A repeat is the same delivery sent again (same x-webhook-id), never a second delivery of one event.
    expect([...byEvent.values()].filter((ids) => ids.size !== 1)).toEqual([]);
    // Only the killed replica's claims can be sent twice: live replicas never send each other's.
    expect(duplicates).toBeLessThanOrEqual(2 * PER_ENDPOINT_IN_FLIGHT);
    // The work was shared: every replica sent some.
    for (const replica of replicas) expect(sentBy(replica)).toBeGreaterThan(0);
    expect(elapsedMs).toBeLessThan(30_000);
  });
});
