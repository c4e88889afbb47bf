/**
 * Issues 12 and 14: two gateway processes, each with its own SQLite file and files folder, sharing files
 * and batches through one PostgreSQL database and nothing else (no shared disk: the bytes are in
 * PostgreSQL). A file uploaded through A is listed and downloaded byte-exact through B; a file deleted
 * through B is gone on A; file.uploaded and file.deleted reach a webhook endpoint created through A; an
 * upload whose parts arrive through both is completed through B and read through A; a batch created on B
 * from a file uploaded through A is followed through A to completion, its output file read through A; the
 * lines of a larger batch are claimed by both replicas, each line sent to the model once (the simulator's
 * log) and answered once.
 */
import { createHash, randomBytes } from 'node:crypto';
import OpenAI, { toFile } from 'openai';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { call } from '../helpers/http.js';
import { freshDatabase, PG_GATEWAY_ENV, requirePostgres, type TestDatabase } from '../helpers/postgres.js';
import { startReplica, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { watchEchoes } from '../helpers/simulator-log.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const MiB = 1024 * 1024;

let sim: SimulatorProcess;
let database: TestDatabase;
let keys: TestKeys;
let a: GatewayProcess;
let b: GatewayProcess;
let onA: OpenAI;
let onB: OpenAI;
let receiver: Receiver;

beforeAll(async () => {
  await requirePostgres();
  keys = makeKeys();
  [sim, database, receiver] = await Promise.all([startSimulatorProcess(), freshDatabase(), startReceiver()]);
  const config = {
    ...testConfig(sim.url, keys, {
      limits: { management_requests_per_minute: 0, files_requests_per_minute: 0 },
      security: { allow_private_targets: true, allow_http_targets: true },
      webhooks: { poll_interval_ms: 50 },
    }),
    batches: { concurrency: 4 },
    storage: { kind: 'postgres', url: database.url },
  };
  // One after the other: the first migrates the database, the second finds it current.
  a = await startReplica(config, 'a', PG_GATEWAY_ENV);
  b = await startReplica(config, 'b', PG_GATEWAY_ENV);
  const client = (gw: GatewayProcess): OpenAI => new OpenAI({ baseURL: `${gw.url}/${PROJECT}/v1`, apiKey: keys.inferenceOnly, maxRetries: 0 });
  [onA, onB] = [client(a), client(b)];
}, 120_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop(), sim?.stop(), receiver?.close()]);
  await database?.drop();
});

const chatLine = (customId: string, text: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ custom_id: customId, method: 'POST', url: '/v1/chat/completions', body: { model: 'model-chat', messages: [{ role: 'user', content: `echo: ${text}` }], ...extra } });
const md5 = (bytes: Buffer): string => createHash('md5').update(bytes).digest('hex');
const download = async (c: OpenAI, id: string): Promise<Buffer> => Buffer.from(await (await c.files.content(id)).arrayBuffer());
const status = (promise: Promise<unknown>): Promise<number | null> =>
  promise.then(
    () => null,
    (err: unknown) => (err instanceof OpenAI.APIError ? (err.status ?? null) : -1),
  );

describe('two replicas sharing files through PostgreSQL, with no shared disk', () => {
  it('lists and serves byte-exact through B a file uploaded through A, and a file deleted through B is 404 on A', async () => {
    const bytes = randomBytes(2.5 * MiB + 17);
    const file = await onA.files.create({ file: await toFile(bytes, 'big.bin'), purpose: 'user_data' });
    const listed = await onB.files.list({ purpose: 'user_data' });
    expect(listed.data.map((f) => f.id)).toContain(file.id);
    expect(await onB.files.retrieve(file.id)).toMatchObject({ id: file.id, bytes: bytes.length, filename: 'big.bin' });
    expect(md5(await download(onB, file.id))).toBe(md5(bytes));

    expect(await onB.files.delete(file.id)).toMatchObject({ id: file.id, deleted: true });
    expect(await status(onA.files.retrieve(file.id))).toBe(404);
    expect(await status(onA.files.content(file.id))).toBe(404);
  });

  it('delivers file.uploaded and file.deleted, written with the rows in PostgreSQL, to an endpoint created through A', async () => {
    const hook = await call(`${a.url}/${PROJECT}/v1/webhooks`, { key: keys.full, body: { url: receiver.url, events: ['file.uploaded', 'file.deleted'] } });
    expect(hook.status).toBe(201);
    const file = await onB.files.create({ file: await toFile(Buffer.from('hello'), 'hook.txt'), purpose: 'user_data' });
    await onB.files.delete(file.id);
    const got = await receiver.waitFor(2, 10_000);
    const events = got.map((d) => d.body as { type: string; data: { id: string } });
    expect(events.map((e) => [e.type, e.data.id]).sort()).toEqual([
      ['file.deleted', file.id],
      ['file.uploaded', file.id],
    ]);
    const removed = await call(`${a.url}/${PROJECT}/v1/webhooks/${(hook.body as { id: string }).id}`, { key: keys.full, method: 'DELETE' });
    expect(removed.status).toBe(200);
  });

  it('completes through B an upload whose parts came through A and B, readable through A', async () => {
    const parts = [randomBytes(1.5 * MiB), randomBytes(MiB + 3)];
    const whole = Buffer.concat(parts);
    const upload = await onA.uploads.create({ filename: 'two-hosts.bin', purpose: 'user_data', bytes: whole.length, mime_type: 'application/octet-stream' });
    const p0 = await onA.uploads.parts.create(upload.id, { data: await toFile(parts[0]!, 'p0') });
    const p1 = await onB.uploads.parts.create(upload.id, { data: await toFile(parts[1]!, 'p1') });
    const done = await onB.uploads.complete(upload.id, { part_ids: [p0.id, p1.id], md5: md5(whole) });
    expect(done.status).toBe('completed');
    const fileId = done.file?.id ?? '';
    expect(md5(await download(onA, fileId))).toBe(md5(whole));
  });

  it('runs a batch created on B from a file uploaded through A, followed through A, its output file read through A', { timeout: 60_000 }, async () => {
    const lines = ['one', 'two', 'three'].map((text) => chatLine(text, text));
    const input = await onA.files.create({ file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'batch.jsonl'), purpose: 'batch' });
    const created = await onB.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    expect((await onA.batches.list()).data.map((x) => x.id)).toContain(created.id);
    await expect
      .poll(async () => (await onA.batches.retrieve(created.id)).status, { timeout: 30_000, interval: 50 })
      .toBe('completed');
    const batch = await onA.batches.retrieve(created.id);
    expect(batch.request_counts).toMatchObject({ total: 3, completed: 3, failed: 0 });
    const output = (await download(onA, batch.output_file_id ?? '')).toString('utf8').trim().split('\n');
    expect(output.map((l) => (JSON.parse(l) as { custom_id: string }).custom_id).sort()).toEqual(['one', 'three', 'two']);
  });

  it('has both replicas claim the lines of one batch, each line sent to the model once and answered once', { timeout: 90_000 }, async () => {
    const N = 200;
    const marker = `m${Date.now().toString(36)}`;
    const ids = Array.from({ length: N }, (_, i) => `${marker}-${i}`);
    const input = await onA.files.create({
      file: await toFile(Buffer.from(`${ids.map((id) => chatLine(id, id, { sim: { delay_ms: 20 } })).join('\n')}\n`), 'many.jsonl'),
      purpose: 'batch',
    });
    // What reached the model, read from the simulator's log as the run goes.
    const echoes = watchEchoes(sim.url, marker);
    const created = await onB.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    await expect.poll(async () => (await onA.batches.retrieve(created.id)).status, { timeout: 60_000, interval: 50 }).toBe('completed');
    await new Promise((r) => setTimeout(r, 100));
    await echoes.stop();

    const batch = await onB.batches.retrieve(created.id);
    expect(batch.request_counts).toEqual({ total: N, completed: N, failed: 0 });
    const output = (await download(onA, batch.output_file_id ?? '')).toString('utf8').trim().split('\n');
    const answered = output.map((l) => (JSON.parse(l) as { custom_id: string }).custom_id);
    expect(answered.length).toBe(N);
    expect(new Set(answered).size).toBe(N);
    const upstream = echoes.counts();
    expect([...upstream.entries()].filter(([, count]) => count > 1)).toEqual([]);
    expect(upstream.size).toBe(N);
    // Both replicas ran lines: the claims are shared, not the creating replica's alone.
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ owner_instance: string; n: number }>(
        'SELECT owner_instance, count(*)::int AS n FROM batch_lines WHERE batch_id = $1 GROUP BY owner_instance',
        [created.id],
      );
      console.log(`batch of ${N} lines on 2 replicas, lines per replica: ${JSON.stringify(rows.map((r) => r.n))}`);
      expect(rows.length).toBe(2);
    } finally {
      await client.end();
    }
  });
});
