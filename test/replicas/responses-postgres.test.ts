/**
 * Issue 12, stored responses and conversations on PostgreSQL: two gateway processes, each with its own
 * SQLite file, share one fresh PostgreSQL database. Before the responses port had a PostgreSQL store,
 * a response stored through replica A was a 404 through replica B (it was in A's SQLite file). Here a
 * response stored via A is retrieved and continued via B, a conversation created via A is extended by a
 * response on B and listed on A, a delete on B is a 404 on A, a background turn running on A is aborted
 * by a cancel made through B, one left running by a SIGKILLed replica is failed "interrupted" by a
 * survivor, and the `response.completed` event is in the shared webhook tables once, with one delivery
 * per subscriber.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { startHeldUpstream, type HeldUpstream } from '../helpers/held-upstream.js';
import { call } from '../helpers/http.js';
import { freshDatabase, PG_GATEWAY_ENV, requirePostgres, type TestDatabase } from '../helpers/postgres.js';
import { startGatewayProcess, startReplica, startSimulatorProcess, tempDir, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

let sim: SimulatorProcess;
let keys: TestKeys;
let receiver: Receiver;
let database: TestDatabase;
let a: GatewayProcess;
let b: GatewayProcess;
let held: HeldUpstream;
let config: Record<string, unknown>;
const ENV = { ...PG_GATEWAY_ENV, SWITCHBOARD_INSTANCE_LEASE_MS: '3000' };

beforeAll(async () => {
  await requirePostgres();
  keys = makeKeys();
  [sim, receiver, database, held] = await Promise.all([startSimulatorProcess(), startReceiver(), freshDatabase(), startHeldUpstream()]);
  config = {
    ...testConfig(sim.url, keys, {
      security: { allow_private_targets: true, allow_http_targets: true },
      webhooks: { attempt_timeout_ms: 2000, poll_interval_ms: 50 },
    }),
    storage: { kind: 'postgres', url: database.url },
  };
  // A model server that holds each turn until the test answers it: a turn provably in flight on A.
  ((config.projects as { endpoints: unknown[] }[])[0]?.endpoints ?? []).push({
    id: 'a0000000-0000-4000-8000-0000000000b1',
    slug: 'held',
    name: 'Held',
    kind: 'chat',
    tier: 'gpu',
    model: { id: 'model-held', context_window: 8192 },
    upstream: { base_url: held.url, model: 'held-model' },
  });
  // One after the other: the first migrates the database, the second finds it current.
  a = await startReplica(config, 'a', ENV);
  b = await startReplica(config, 'b', ENV);
}, 120_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop(), sim?.stop()]);
  await receiver?.close();
  await held?.close();
  await database?.drop();
});

type Json = Record<string, unknown>;
const respond = (replica: GatewayProcess, body: Json) => call(`${replica.url}/${PROJECT}/v1/responses`, { key: keys.full, body: { model: 'model-chat', ...body } });
const idOf = (res: { body: unknown }): string => String((res.body as Json).id);

async function sharedQuery<R extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<R[]> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    return (await client.query<R>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

describe('two replicas sharing stored responses and conversations in PostgreSQL', () => {
  it('retrieves via B a response stored via A, continues it via B, and lists its input items', async () => {
    const created = await respond(a, { input: 'Remember the word lighthouse.', store: true });
    expect(created.status).toBe(200);
    const id = idOf(created);

    const got = await call(`${b.url}/${PROJECT}/v1/responses/${id}`, { key: keys.full });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created.body);
    const items = await call(`${b.url}/${PROJECT}/v1/responses/${id}/input_items`, { key: keys.full });
    expect(items.status).toBe(200);
    expect((items.body as { data: Json[] }).data).toHaveLength(1);

    const next = await respond(b, { input: 'Which word?', previous_response_id: id });
    expect(next.status).toBe(200);
    expect((await call(`${a.url}/${PROJECT}/v1/responses/${idOf(next)}`, { key: keys.full })).body).toMatchObject({ id: idOf(next), previous_response_id: id, status: 'completed' });
  });

  it('appends to a conversation created via A the items of a response made on B, listed on A', async () => {
    const conv = await call(`${a.url}/${PROJECT}/v1/conversations`, { key: keys.full, body: { items: [{ type: 'message', role: 'user', content: 'first' }] } });
    expect(conv.status).toBe(200);
    const convId = idOf(conv);
    const turn = await respond(b, { input: 'second', conversation: convId });
    expect(turn.status).toBe(200);

    const listed = await call(`${a.url}/${PROJECT}/v1/conversations/${convId}/items?order=asc`, { key: keys.full });
    expect(listed.status).toBe(200);
    const data = (listed.body as { data: Json[] }).data;
    // The first item, the response's input, then its output message.
    expect(data).toHaveLength(3);
    expect(data[2]?.id).toBe(((turn.body as { output: Json[] }).output[0] as Json).id);
    expect((await call(`${b.url}/${PROJECT}/v1/conversations/${convId}`, { key: keys.full })).status).toBe(200);
  });

  it('runs a background response on A that B retrieves queued or running, then completed', async () => {
    const created = await respond(a, { input: 'in the background', background: true });
    expect(created.status).toBe(200);
    expect((created.body as Json).status).toBe('queued');
    const statusOnB = async () => String(((await call(`${b.url}/${PROJECT}/v1/responses/${idOf(created)}`, { key: keys.full })).body as Json).status);
    await expect.poll(statusOnB, { timeout: 10_000, interval: 50 }).toBe('completed');
  });

  it('aborts the turn running on A of a background response cancelled through B', async () => {
    const created = await respond(a, { model: 'model-held', input: 'take your time', background: true });
    expect(created.status).toBe(200);
    const upstream = await held.next();
    const cancelled = await call(`${b.url}/${PROJECT}/v1/responses/${idOf(created)}/cancel`, { key: keys.full, method: 'POST' });
    expect(cancelled.status).toBe(200);
    expect((cancelled.body as Json).status).toBe('cancelled');
    // A hears B's notice and aborts its upstream call, as a cancel made on A would.
    await upstream.abandoned;
    expect(((await call(`${a.url}/${PROJECT}/v1/responses/${idOf(created)}`, { key: keys.full })).body as Json).status).toBe('cancelled');
  });

  it('fails "interrupted", through a survivor, the background response a SIGKILLed replica was running', { timeout: 60_000 }, async () => {
    const dir = tempDir();
    const victim = await startGatewayProcess(config, { dir, dbPath: `${dir}/c.db`, env: ENV });
    try {
      const created = await respond(victim, { model: 'model-held', input: 'never finished', background: true });
      expect(created.status).toBe(200);
      await held.next();
      expect(((await call(`${b.url}/${PROJECT}/v1/responses/${idOf(created)}`, { key: keys.full })).body as Json).status).toBe('in_progress');
      expect(await victim.stop('SIGKILL')).toBe('SIGKILL');
      // A survivor's beat finds the victim dead (its pid, on this machine) and fails its running response.
      const onA = async () => (await call(`${a.url}/${PROJECT}/v1/responses/${idOf(created)}`, { key: keys.full })).body as Json;
      await expect.poll(async () => (await onA()).status, { timeout: 15_000, interval: 100 }).toBe('failed');
      expect((await onA()).error).toMatchObject({ code: 'interrupted' });
    } finally {
      await victim.stop();
    }
  });

  it('answers 404 on A for a response deleted on B', async () => {
    const id = idOf(await respond(a, { input: 'to be deleted' }));
    expect((await call(`${a.url}/${PROJECT}/v1/responses/${id}`, { key: keys.full })).status).toBe(200);
    const deleted = await call(`${b.url}/${PROJECT}/v1/responses/${id}`, { key: keys.full, method: 'DELETE' });
    expect(deleted.status).toBe(200);
    const gone = await call(`${a.url}/${PROJECT}/v1/responses/${id}`, { key: keys.full });
    expect(gone.status).toBe(404);
    expect((gone.body as { error: Json }).error.code).toBe('response_not_found');
  });

  it('puts the response.completed event in the shared tables once, delivered once', async () => {
    const hook = await call(`${a.url}/${PROJECT}/v1/webhooks`, { key: keys.full, body: { url: receiver.url, events: ['response.completed'] } });
    expect(hook.status).toBe(201);
    const id = idOf(await respond(b, { input: 'with an event' }));

    const events = await sharedQuery<{ id: string }>("SELECT id FROM webhook_events WHERE type = 'response.completed' AND body::jsonb -> 'data' ->> 'id' = $1", [id]);
    expect(events).toHaveLength(1);
    const deliveries = await sharedQuery<{ webhook_id: string }>('SELECT webhook_id FROM webhook_deliveries WHERE event_id = $1', [events[0]?.id]);
    expect(deliveries).toEqual([{ webhook_id: idOf(hook) }]);
    await expect.poll(() => receiver.received.filter((d) => (d.body.data as Json).id === id).length, { timeout: 10_000, interval: 50 }).toBe(1);
  });
});
