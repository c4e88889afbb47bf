/**
 * Files and uploads (issue 14) through the official `openai` client and raw fetch, against a real gateway
 * process: bytes round-trip to disk and back, listing pages, caps, refusals, the file.* events, the
 * multi-part upload flow, and the gateway's memory while a large file streams through it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, OTHER_PROJECT, PROJECT, testConfig } from '../helpers/configs.js';
import { advanceClock, call, expectError } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const MiB = 1024 * 1024;
const MAX_BYTES = 52 * MiB;
const keys = makeKeys();
let sim: SimulatorProcess;
let gw: GatewayProcess;
let receiver: Receiver;
let client: OpenAI;

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const filesDir = (): string => join(dirname(gw.dbPath), 'files');
const rawStatus = (e: unknown): { status: number; code: unknown; param: unknown } => {
  const err = e as { status: number; error?: { code?: unknown; param?: unknown } };
  return { status: err.status, code: err.error?.code, param: err.error?.param };
};
async function refusal(p: Promise<unknown>): Promise<{ status: number; code: unknown; param: unknown }> {
  try {
    await p;
  } catch (e) {
    return rawStatus(e);
  }
  throw new Error('expected a refusal');
}

function vmRssKiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1]);
}

beforeAll(async () => {
  sim = await startSimulatorProcess();
  const config = testConfig(sim.url, keys, {
    security: { allow_private_targets: true, allow_http_targets: true },
    webhooks: { attempt_timeout_ms: 1000, poll_interval_ms: 50 },
    limits: { management_requests_per_minute: 0 },
  });
  gw = await startGatewayProcess({ ...config, files: { max_bytes: MAX_BYTES, max_part_bytes: 4 * MiB } });
  receiver = await startReceiver();
  const hook = await call(`${gw.url}/${PROJECT}/v1/webhooks`, { key: keys.full, body: { url: receiver.url, events: ['file.uploaded', 'file.deleted'] } });
  expect(hook.status).toBe(201);
  client = new OpenAI({ baseURL: `${gw.url}/${PROJECT}/v1`, apiKey: keys.inferenceOnly, maxRetries: 0 });
});

afterAll(async () => {
  await receiver?.close();
  await gw?.stop();
  await sim?.stop();
});

describe('files through the openai client', () => {
  it('round-trips a few MiB byte for byte, keeps them on disk, and lists, retrieves and deletes the file', async () => {
    const bytes = randomBytes(3 * MiB + 123);
    const file = await client.files.create({ file: await toFile(bytes, 'input.jsonl'), purpose: 'batch' });
    expect(file).toMatchObject({ object: 'file', bytes: bytes.length, filename: 'input.jsonl', purpose: 'batch' });
    expect(file.id).toMatch(/^file-[0-9a-f]{24}$/);
    expect(existsSync(join(filesDir(), file.id))).toBe(true);

    const content = await client.files.content(file.id);
    expect(content.headers.get('content-type')).toBe('application/octet-stream');
    expect(sha(new Uint8Array(await content.arrayBuffer()))).toBe(sha(bytes));
    expect(await client.files.retrieve(file.id)).toEqual(file);

    expect(await client.files.delete(file.id)).toEqual({ id: file.id, object: 'file', deleted: true });
    expect(existsSync(join(filesDir(), file.id))).toBe(false);
    expect((await refusal(client.files.retrieve(file.id))).code).toBe('file_not_found');
    const res = await call(`${gw.url}/${PROJECT}/v1/files/${file.id}/content`, { key: keys.full });
    expectError(res, 404, 'file_not_found', 'file_id');
  });

  it('emits file.uploaded and file.deleted with the file object', async () => {
    const file = await client.files.create({ file: await toFile(Buffer.from('{"a":1}\n'), 'e.jsonl'), purpose: 'user_data' });
    await client.files.delete(file.id);
    // Deliveries of earlier tests' files may still be arriving: pick this file's two by id.
    const mine = () => receiver.received.map((d) => d.body).filter((b) => (b.data as Record<string, unknown>).id === file.id);
    await expect.poll(() => mine().length, { timeout: 10_000 }).toBe(2);
    const byType = new Map(mine().map((b) => [b.type, b.data as Record<string, unknown>]));
    expect(byType.get('file.uploaded')).toMatchObject({ id: file.id, object: 'file', bytes: 8, purpose: 'user_data', filename: 'e.jsonl' });
    expect(byType.get('file.deleted')).toMatchObject({ id: file.id, deleted: true });
  });

  it('pages the list with limit and after, newest first by default, filtered by purpose', async () => {
    const made: string[] = [];
    for (let i = 0; i < 3; i++) made.push((await client.files.create({ file: await toFile(Buffer.from(`v${i}`), `v${i}.png`), purpose: 'vision' })).id);
    const first = await client.files.list({ purpose: 'vision', limit: 2 });
    expect(first.data.map((f) => f.id)).toEqual([made[2], made[1]]);
    expect(first.has_more).toBe(true);
    const all: string[] = [];
    for await (const f of client.files.list({ purpose: 'vision', limit: 2 })) all.push(f.id);
    expect(all).toEqual([...made].reverse());
    const asc = await client.files.list({ purpose: 'vision', order: 'asc', limit: 10 });
    expect(asc.data.map((f) => f.id)).toEqual(made);
    expect(asc.has_more).toBe(false);
    expectError(await call(`${gw.url}/${PROJECT}/v1/files?limit=0`, { key: keys.full }), 400, 'invalid_limit', 'limit');
    expectError(await call(`${gw.url}/${PROJECT}/v1/files?order=up`, { key: keys.full }), 400, 'invalid_query', 'order');
  });

  it('refuses an unknown purpose and a body without the file field, leaving nothing behind', async () => {
    const unknown = await refusal(client.files.create({ file: await toFile(Buffer.from('x'), 'x.txt'), purpose: 'nonsense' as 'batch' }));
    expect(unknown).toEqual({ status: 400, code: 'invalid_request', param: 'purpose' });
    const form = new FormData();
    form.append('purpose', 'batch');
    const res = await fetch(`${gw.url}/${PROJECT}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${keys.full}` }, body: form });
    expectError({ status: res.status, headers: res.headers, body: await res.json() }, 400, 'invalid_request', 'file');
    const { readdirSync } = await import('node:fs');
    expect(readdirSync(join(filesDir(), 'tmp'))).toEqual([]);
  });

  it('answers 413 payload_too_large past files.max_bytes', async () => {
    const form = new FormData();
    form.append('purpose', 'batch');
    form.append('file', new Blob([new Uint8Array(MAX_BYTES + 64 * 1024)]), 'big.bin');
    const res = await fetch(`${gw.url}/${PROJECT}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${keys.full}` }, body: form });
    expectError({ status: res.status, headers: res.headers, body: await res.json() }, 413, 'payload_too_large');
  });

  it("gives 404 file_not_found for another project's file", async () => {
    const file = await client.files.create({ file: await toFile(Buffer.from('mine'), 'm.txt'), purpose: 'user_data' });
    const other = new OpenAI({ baseURL: `${gw.url}/${OTHER_PROJECT}/v1`, apiKey: keys.otherProject, maxRetries: 0 });
    expect(await refusal(other.files.retrieve(file.id))).toEqual({ status: 404, code: 'file_not_found', param: 'file_id' });
    expect((await refusal(other.files.delete(file.id))).status).toBe(404);
    expect((await client.files.retrieve(file.id)).id).toBe(file.id);
  });

  it('streams a 50 MiB upload to disk without holding it in memory', async () => {
    await client.files.create({ file: await toFile(randomBytes(MiB), 'warm.bin'), purpose: 'user_data' });
    const pid = gw.proc.pid ?? 0;
    const before = vmRssKiB(pid);
    const bytes = randomBytes(50 * MiB);
    const file = await client.files.create({ file: await toFile(bytes, 'fifty.bin'), purpose: 'user_data' });
    const after = vmRssKiB(pid);
    expect(file.bytes).toBe(50 * MiB);
    expect(after - before).toBeLessThan(20 * 1024);
    expect(sha(readFileSync(join(filesDir(), file.id)))).toBe(sha(bytes));
  });
});

describe('uploads through the openai client', () => {
  it('assembles three parts, sent out of order, in the order complete names them', async () => {
    const chunks = [randomBytes(MiB), randomBytes(MiB + 7), randomBytes(1000)];
    const whole = Buffer.concat(chunks);
    const upload = await client.uploads.create({ filename: 'big.jsonl', purpose: 'batch', bytes: whole.length, mime_type: 'application/jsonl' });
    expect(upload).toMatchObject({ object: 'upload', status: 'pending', bytes: whole.length, filename: 'big.jsonl', purpose: 'batch', file: null });
    expect(upload.expires_at - upload.created_at).toBe(3600);
    const part = async (i: number) => client.uploads.parts.create(upload.id, { data: await toFile(chunks[i] ?? Buffer.alloc(0), `p${i}`) });
    const p2 = await part(2);
    const p0 = await part(0);
    const p1 = await part(1);
    expect(p0).toMatchObject({ object: 'upload.part', upload_id: upload.id });
    const md5 = createHash('md5').update(whole).digest('hex');
    const done = await client.uploads.complete(upload.id, { part_ids: [p0.id, p1.id, p2.id], md5 });
    expect(done.status).toBe('completed');
    expect(done.file).toMatchObject({ object: 'file', bytes: whole.length, filename: 'big.jsonl', purpose: 'batch' });
    const content = await client.files.content(done.file?.id ?? '');
    expect(sha(new Uint8Array(await content.arrayBuffer()))).toBe(sha(whole));
    expect(await refusal(client.uploads.complete(upload.id, { part_ids: [p0.id] }))).toMatchObject({ status: 409, code: 'invalid_state' });
  });

  it('refuses to complete with a byte count other than the declared one, or a wrong md5', async () => {
    const upload = await client.uploads.create({ filename: 'x.bin', purpose: 'user_data', bytes: 10, mime_type: 'application/octet-stream' });
    const p = await client.uploads.parts.create(upload.id, { data: await toFile(Buffer.alloc(6), 'p') });
    expect(await refusal(client.uploads.complete(upload.id, { part_ids: [p.id] }))).toEqual({ status: 400, code: 'invalid_request', param: 'part_ids' });
    const q = await client.uploads.parts.create(upload.id, { data: await toFile(Buffer.alloc(4), 'q') });
    const wrong = await refusal(client.uploads.complete(upload.id, { part_ids: [p.id, q.id], md5: '0'.repeat(32) }));
    expect(wrong).toEqual({ status: 400, code: 'invalid_request', param: 'md5' });
    expect((await client.uploads.complete(upload.id, { part_ids: [q.id, p.id] })).status).toBe('completed');
  });

  it('cancels an upload, deleting its parts, and refuses parts and complete afterwards', async () => {
    const upload = await client.uploads.create({ filename: 'c.bin', purpose: 'user_data', bytes: 3, mime_type: 'application/octet-stream' });
    const p = await client.uploads.parts.create(upload.id, { data: await toFile(Buffer.from('abc'), 'p') });
    expect(existsSync(join(filesDir(), 'parts', p.id))).toBe(true);
    expect((await client.uploads.cancel(upload.id)).status).toBe('cancelled');
    expect(existsSync(join(filesDir(), 'parts', p.id))).toBe(false);
    expect((await refusal(client.uploads.complete(upload.id, { part_ids: [p.id] }))).code).toBe('invalid_state');
    expect((await refusal(client.uploads.parts.create(upload.id, { data: await toFile(Buffer.from('d'), 'd') }))).code).toBe('invalid_state');
    expect(await refusal(client.uploads.cancel('upload_000000000000000000000000'))).toEqual({ status: 404, code: 'upload_not_found', param: 'upload_id' });
  });

  it('answers 413 for a part past files.max_part_bytes', async () => {
    const upload = await client.uploads.create({ filename: 'b.bin', purpose: 'user_data', bytes: 5 * MiB, mime_type: 'application/octet-stream' });
    const big = await refusal(client.uploads.parts.create(upload.id, { data: await toFile(Buffer.alloc(4 * MiB + 1), 'p') }));
    expect(big).toMatchObject({ status: 413, code: 'payload_too_large' });
  });

  it('expires an upload an hour after creation (injected clock) and deletes its parts', async () => {
    const upload = await client.uploads.create({ filename: 'late.bin', purpose: 'user_data', bytes: 2, mime_type: 'application/octet-stream' });
    const p = await client.uploads.parts.create(upload.id, { data: await toFile(Buffer.from('y'), 'y') });
    await advanceClock(gw.url, 60 * 60 * 1000 + 1);
    expect((await refusal(client.uploads.parts.create(upload.id, { data: await toFile(Buffer.from('z'), 'z') }))).code).toBe('invalid_state');
    expect((await refusal(client.uploads.complete(upload.id, { part_ids: [p.id] }))).code).toBe('invalid_state');
    expect((await refusal(client.uploads.cancel(upload.id))).code).toBe('invalid_state');
    // The next upload's creation sweeps expired ones.
    await client.uploads.create({ filename: 'next.bin', purpose: 'user_data', bytes: 1, mime_type: 'application/octet-stream' });
    await expect.poll(() => existsSync(join(filesDir(), 'parts', p.id))).toBe(false);
  });
});
