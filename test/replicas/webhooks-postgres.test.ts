/**
 * Issue 12, webhooks on PostgreSQL: three gateway processes, each with its own SQLite file, share one
 * fresh PostgreSQL database. An endpoint created on one is listed on the others. Events injected on one
 * replica go into its SQLite outbox and are relayed to PostgreSQL, where every replica claims deliveries
 * (FOR UPDATE SKIP LOCKED, under leases of the PostgreSQL instance registry). One replica is SIGKILLed
 * mid-run: its claims go back once the survivors see it dead (its pid, on this machine, or its lease),
 * and every event arrives. At least once allows repeats of what the killed replica held: each is the
 * same delivery id sent again, counted and reported.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { call } from '../helpers/http.js';
import { freshDatabase, PG_GATEWAY_ENV, requirePostgres, type TestDatabase } from '../helpers/postgres.js';
import { startGatewayProcess, startSimulatorProcess, tempDir, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const EVENTS = 1000;
const PER_ENDPOINT_IN_FLIGHT = 16;
const ENV = { ...PG_GATEWAY_ENV, SWITCHBOARD_INSTANCE_LEASE_MS: '3000' };

let sim: SimulatorProcess;
let keys: TestKeys;
let receiver: Receiver;
let database: TestDatabase;
const processes: GatewayProcess[] = [];

beforeAll(async () => {
  await requirePostgres();
  keys = makeKeys();
  [sim, receiver, database] = await Promise.all([startSimulatorProcess(), startReceiver(), freshDatabase()]);
  // Long enough an answer that every replica has requests open when the kill comes.
  receiver.respond(() => ({ status: 200, body: 'ok', delayMs: 20 }));
});

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop()));
  await receiver?.close();
  await sim?.stop();
  await database?.drop();
});

const sentBy = (gw: GatewayProcess): number => gw.stdout.join('').split('webhooks: delivery attempt succeeded').length - 1;

describe(`three replicas on PostgreSQL with ${EVENTS} webhook deliveries, one SIGKILLed mid-run`, () => {
  it('lists an endpoint created on one replica on the others, and delivers every event though a replica dies', { timeout: 90_000 }, async () => {
    const dir = tempDir();
    const config = {
      ...testConfig(sim.url, keys, {
        security: { allow_private_targets: true, allow_http_targets: true },
        testing: { event_injection: true },
        webhooks: { attempt_timeout_ms: 10_000, poll_interval_ms: 50, per_endpoint_in_flight: PER_ENDPOINT_IN_FLIGHT },
      }),
      storage: { kind: 'postgres', url: database.url },
    };
    const starts = await Promise.allSettled(['a', 'b', 'c'].map((name) => startGatewayProcess(config, { dir, dbPath: `${dir}/${name}.db`, env: ENV })));
    // Those that did start are stopped after the test even when another did not.
    const replicas = starts.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    processes.push(...replicas);
    for (const s of starts) if (s.status === 'rejected') throw s.reason;
    const [victim, other, emitter] = replicas as [GatewayProcess, GatewayProcess, GatewayProcess];

    const hook = await call(`${victim.url}/${PROJECT}/v1/webhooks`, { key: keys.full, body: { url: receiver.url, events: ['exec.completed'] } });
    expect(hook.status).toBe(201);
    for (const replica of [other, emitter]) {
      const listed = await call(`${replica.url}/${PROJECT}/v1/webhooks`, { key: keys.full });
      expect(listed.status).toBe(200);
      expect((listed.body as { data: { id: string }[] }).data.map((w) => w.id)).toEqual([(hook.body as { id: string }).id]);
    }

    const started = Date.now();
    const emitted = await call(`${emitter.url}/__test/webhook-events`, { body: { project: PROJECT, type: 'exec.completed', count: EVENTS } });
    expect(emitted.status).toBe(200);

    // Mid-run, with the victim sending: it has delivered some, and holds claims.
    await receiver.waitFor(EVENTS / 4, 30_000);
    await expect.poll(() => sentBy(victim), { timeout: 15_000, interval: 5 }).toBeGreaterThan(0);
    expect(await victim.stop('SIGKILL')).toBe('SIGKILL');
    const killedAt = receiver.received.length;

    const distinct = (): number => new Set(receiver.received.map((d) => String(d.body.id))).size;
    await expect.poll(distinct, { timeout: 40_000, interval: 50 }).toBe(EVENTS);

    const byEvent = new Map<string, Set<string>>();
    for (const d of receiver.received) {
      const event = String(d.body.id);
      byEvent.set(event, (byEvent.get(event) ?? new Set<string>()).add(String(d.headers['x-webhook-id'])));
    }
    const duplicates = receiver.received.length - byEvent.size;
    const report = {
      events: EVENTS,
      requests: receiver.received.length,
      delivered: byEvent.size,
      duplicates,
      requests_before_kill: killedAt,
      sent_by_replica: replicas.map(sentBy),
      elapsed_ms: Date.now() - started,
    };
    console.log(`webhooks on PostgreSQL, 3 replicas, one killed: ${JSON.stringify(report)}`);

    // A repeat is the same delivery sent again (same x-webhook-id), never a second delivery of one event.
    expect([...byEvent.values()].filter((ids) => ids.size !== 1)).toEqual([]);
    // Only the killed replica's claims can be sent twice: live replicas never send each other's.
    expect(duplicates).toBeLessThanOrEqual(2 * PER_ENDPOINT_IN_FLIGHT);
    for (const replica of replicas) expect(sentBy(replica)).toBeGreaterThan(0);
  });
});
