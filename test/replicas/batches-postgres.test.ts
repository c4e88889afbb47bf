/**
 * Issues 12 and 14, the resume rule across replicas: two gateway processes share one batch through
 * PostgreSQL, both claiming its lines; one is SIGKILLed mid-batch. The survivor fails the lines the dead
 * replica had in flight "interrupted" (once the shared registry drops it: its pid is gone on this host)
 * and runs every other line itself: every line is answered exactly once, and no line reaches the model
 * twice (the simulator's log, read as it fills).
 */
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { freshDatabase, PG_GATEWAY_ENV, requirePostgres, type TestDatabase } from '../helpers/postgres.js';
import { startReplica, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { watchEchoes } from '../helpers/simulator-log.js';

const N = 400;
const CONCURRENCY = 4;

let sim: SimulatorProcess;
let database: TestDatabase;
let keys: TestKeys;
let survivor: GatewayProcess;
let victim: GatewayProcess;

beforeAll(async () => {
  await requirePostgres();
  keys = makeKeys();
  [sim, database] = await Promise.all([startSimulatorProcess(), freshDatabase()]);
  const config = {
    ...testConfig(sim.url, keys, { limits: { management_requests_per_minute: 0, files_requests_per_minute: 0 } }),
    batches: { concurrency: CONCURRENCY },
    storage: { kind: 'postgres', url: database.url },
  };
  const env = { ...PG_GATEWAY_ENV, SWITCHBOARD_INSTANCE_LEASE_MS: '3000' };
  survivor = await startReplica(config, 'a', env);
  victim = await startReplica(config, 'b', env);
}, 120_000);

afterAll(async () => {
  await Promise.all([survivor?.stop(), victim?.stop(), sim?.stop()]);
  await database?.drop();
});

type ResultLine = { custom_id: string; error: { code: string } | null };

describe('a batch shared by two replicas on PostgreSQL, one SIGKILLed mid-batch', () => {
  it('answers every line exactly once and never sends a line to the model twice', { timeout: 120_000 }, async () => {
    const client = (gw: GatewayProcess): OpenAI => new OpenAI({ baseURL: `${gw.url}/${PROJECT}/v1`, apiKey: keys.inferenceOnly, maxRetries: 0 });
    const [onSurvivor, onVictim] = [client(survivor), client(victim)];
    const marker = `k${Date.now().toString(36)}`;
    const ids = Array.from({ length: N }, (_, i) => `${marker}-${i}`);
    const lines = ids.map((id) =>
      JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model: 'model-chat', messages: [{ role: 'user', content: `echo: ${id}` }], sim: { delay_ms: 20 } } }),
    );
    const input = await onVictim.files.create({ file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'batch.jsonl'), purpose: 'batch' });

    // What reached the model, read from the simulator's log as the run goes.
    const echoes = watchEchoes(sim.url, marker);

    const created = await onVictim.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    await expect.poll(async () => (await onSurvivor.batches.retrieve(created.id)).request_counts?.completed ?? 0, { timeout: 30_000, interval: 20 }).toBeGreaterThanOrEqual(N / 4);
    expect(await victim.stop('SIGKILL')).toBe('SIGKILL');

    await expect.poll(async () => (await onSurvivor.batches.retrieve(created.id)).status, { timeout: 60_000, interval: 50 }).toBe('completed');
    await new Promise((r) => setTimeout(r, 100));
    await echoes.stop();

    const done = await onSurvivor.batches.retrieve(created.id);
    const read = async (id: string | null | undefined): Promise<ResultLine[]> =>
      id ? (await (await onSurvivor.files.content(id)).text()).trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as ResultLine) : [];
    const output = await read(done.output_file_id);
    const errors = await read(done.error_file_id);
    const all = [...output, ...errors].map((l) => l.custom_id);
    console.log(`batch of ${N} lines, 2 replicas, one killed: ${JSON.stringify({ answered: output.length, interrupted: errors.length, upstream: echoes.counts().size })}`);
    expect(all.length).toBe(N);
    expect(new Set(all).size).toBe(N);
    // Only the lines the dead replica had in flight are failed, as interrupted: at most its concurrency.
    expect(errors.every((l) => l.error?.code === 'interrupted')).toBe(true);
    expect(errors.length).toBeLessThanOrEqual(CONCURRENCY);
    expect(done.request_counts).toEqual({ total: N, completed: output.length, failed: errors.length });
    const upstream = echoes.counts();
    expect([...upstream.entries()].filter(([, count]) => count > 1)).toEqual([]);
    for (const l of output) expect(upstream.get(l.custom_id)).toBe(1);
  });
});
