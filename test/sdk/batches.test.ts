/**
 * Batches (issue 14) through the official `openai` client and raw fetch, against real gateway and
 * simulator processes: chat and embeddings lines end to end (output file content per custom_id), invalid
 * lines and refused requests into the error file, cancel, refusals, and a batch of 1,000 lines with a
 * SIGKILL in the middle: after the restart every line is answered exactly once, and no line reached the
 * model twice (the simulator's log, read as it fills, counted per custom_id).
 */
import Database from 'better-sqlite3';
import OpenAI, { toFile } from 'openai';
import type { Batch } from 'openai/resources/batches';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig } from '../helpers/configs.js';
import { advanceClock, call, errorOf, expectError } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, tempDir, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { watchEchoes } from '../helpers/simulator-log.js';
import { openUsageDb } from '../helpers/usage-db.js';

const keys = makeKeys();
let sim: SimulatorProcess;
let gw: GatewayProcess;
let client: OpenAI;

const config = () =>
  testConfig(sim.url, keys, {
    limits: { management_requests_per_minute: 0, files_requests_per_minute: 0 },
  });

const chatLine = (customId: string, text: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ custom_id: customId, method: 'POST', url: '/v1/chat/completions', body: { model: 'model-chat', messages: [{ role: 'user', content: `echo: ${text}` }], ...extra } });

async function upload(c: OpenAI, lines: readonly string[]): Promise<string> {
  const file = await c.files.create({ file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'batch.jsonl'), purpose: 'batch' });
  return file.id;
}

async function settled(c: OpenAI, id: string, timeoutMs = 30_000): Promise<Batch> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const b = await c.batches.retrieve(id);
    if (['completed', 'failed', 'expired', 'cancelled'].includes(b.status)) return b;
    if (Date.now() > until) throw new Error(`batch ${id} still ${b.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Polls the gateway's file until `expected` lines of the batch wait for the limiter (pending with a not_before), or 10 s pass. */
async function deferredLines(dbPath: string, batchId: string, expected = 4): Promise<number> {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  const deferred = db.prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM batch_lines WHERE batch_id = ? AND state = 'pending' AND not_before > 0");
  try {
    const until = Date.now() + 10_000;
    for (;;) {
      const n = deferred.get(batchId)?.n ?? 0;
      if (n >= expected || Date.now() > until) return n;
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    db.close();
  }
}

type ResultLine = { id: string; custom_id: string | null; response: { status_code: number; request_id: string; body: Record<string, unknown> } | null; error: { code: string; message: string } | null };

async function linesOf(c: OpenAI, fileId: string | null | undefined): Promise<ResultLine[]> {
  if (!fileId) return [];
  const text = await (await c.files.content(fileId)).text();
  return text.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as ResultLine);
}

const contentOf = (l: ResultLine): unknown => ((l.response?.body.choices as { message: { content: string } }[] | undefined) ?? [])[0]?.message.content;

beforeAll(async () => {
  sim = await startSimulatorProcess();
  gw = await startGatewayProcess(config());
  client = new OpenAI({ baseURL: `${gw.url}/${PROJECT}/v1`, apiKey: keys.inferenceOnly, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.stop();
  await sim?.stop();
});

describe('batches through the openai client', () => {
  it('runs a small chat batch end to end: each custom_id gets its own answer in the output file', async () => {
    const fileId = await upload(client, [chatLine('alpha', 'one'), chatLine('beta', 'two two'), chatLine('gamma', 'three three three')]);
    const created = await client.batches.create({ input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { job: 'nightly' } });
    expect(created).toMatchObject({ object: 'batch', endpoint: '/v1/chat/completions', input_file_id: fileId, completion_window: '24h', metadata: { job: 'nightly' } });
    expect(created.id).toMatch(/^batch_[0-9a-f]{24}$/);
    expect(['validating', 'in_progress', 'finalizing', 'completed']).toContain(created.status);

    const done = await settled(client, created.id);
    expect(done).toMatchObject({ status: 'completed', request_counts: { total: 3, completed: 3, failed: 0 }, error_file_id: null });
    expect(done.completed_at).toBeGreaterThanOrEqual(done.created_at);
    const output = await linesOf(client, done.output_file_id);
    expect(Object.fromEntries(output.map((l) => [l.custom_id, contentOf(l)]))).toEqual({ alpha: 'one', beta: 'two two', gamma: 'three three three' });
    for (const l of output) {
      expect(l.error).toBeNull();
      expect(l.response?.status_code).toBe(200);
      expect(l.response?.request_id).toMatch(/^chatcmpl-/);
      expect(l.response?.body).toMatchObject({ object: 'chat.completion', model: 'model-chat' });
    }
    // Each line is billed like a live request: one usage row under its request id, for the creating key.
    const usage = openUsageDb(gw.dbPath);
    try {
      for (const l of output) {
        const row = await usage.waitForRow(l.response?.request_id ?? '');
        expect(row).toMatchObject({ route: 'chat', status: 'completed', key_id: usage.keyIdFor(keys.inferenceOnly) });
        // The simulator echoes the line's words, one token each.
        expect(row.completion_tokens).toBe(String(contentOf(l)).split(' ').length);
      }
    } finally {
      usage.close();
    }
    const listed = await client.batches.list({ limit: 10 });
    expect(listed.data.map((b) => b.id)).toContain(created.id);
  });

  it('runs embeddings lines on the embedding endpoint the body names', async () => {
    const fileId = await upload(client, [
      JSON.stringify({ custom_id: 'e1', method: 'POST', url: '/v1/embeddings', body: { model: 'model-embed', input: 'hello' } }),
      JSON.stringify({ custom_id: 'e2', method: 'POST', url: '/v1/embeddings', body: { model: 'model-embed', input: ['a', 'b'] } }),
    ]);
    const b = await client.batches.create({ input_file_id: fileId, endpoint: '/v1/embeddings', completion_window: '24h' });
    const done = await settled(client, b.id);
    expect(done.request_counts).toEqual({ total: 2, completed: 2, failed: 0 });
    const output = await linesOf(client, done.output_file_id);
    const byId = Object.fromEntries(output.map((l) => [l.custom_id, l.response?.body as { object: string; data: unknown[]; model: string }]));
    expect(byId.e1).toMatchObject({ object: 'list', model: 'model-embed' });
    expect(byId.e1?.data).toHaveLength(1);
    expect(byId.e2?.data).toHaveLength(2);
  });

  it('answers invalid lines and refused requests in the error file, and the valid ones in the output file', async () => {
    const fileId = await upload(client, [
      chatLine('ok', 'fine'),
      '{not json',
      JSON.stringify({ custom_id: 'get', method: 'GET', url: '/v1/chat/completions', body: { model: 'model-chat' } }),
      JSON.stringify({ custom_id: 'emb', method: 'POST', url: '/v1/embeddings', body: { model: 'model-embed', input: 'x' } }),
      chatLine('ok', 'again'),
      JSON.stringify({ custom_id: 'nomodel', method: 'POST', url: '/v1/chat/completions', body: { model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] } }),
      JSON.stringify({ custom_id: 'badbody', method: 'POST', url: '/v1/chat/completions', body: { model: 'model-chat', messages: 'nope' } }),
    ]);
    const b = await client.batches.create({ input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' });
    const done = await settled(client, b.id);
    expect(done).toMatchObject({ status: 'completed', request_counts: { total: 7, completed: 1, failed: 6 } });
    expect((await linesOf(client, done.output_file_id)).map((l) => [l.custom_id, contentOf(l)])).toEqual([['ok', 'fine']]);
    const errors = await linesOf(client, done.error_file_id);
    const summary = errors.map((l) => [l.custom_id, l.error?.code ?? l.response?.status_code, (l.response?.body.error as { code?: string } | undefined)?.code ?? null]);
    expect(summary).toEqual([
      [null, 'invalid_json', null],
      ['get', 'invalid_request', null],
      ['emb', 'mismatched_endpoint', null],
      ['ok', 'duplicate_custom_id', null],
      ['nomodel', 404, 'model_not_found'],
      ['badbody', 400, 'invalid_request'],
    ]);
  });

  it('completes a batch whose every line fails validation at once, not at the next minute sweep', async () => {
    const fileId = await upload(client, ['{not json', JSON.stringify({ custom_id: 'get', method: 'GET', url: '/v1/chat/completions', body: { model: 'model-chat' } })]);
    const b = await client.batches.create({ input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' });
    // The sweep runs every 60 s: well past this test's 10 s.
    const done = await settled(client, b.id, 10_000);
    expect(done).toMatchObject({ status: 'completed', output_file_id: null, request_counts: { total: 2, completed: 0, failed: 2 } });
    expect((await linesOf(client, done.error_file_id)).map((l) => l.error?.code)).toEqual(['invalid_json', 'invalid_request']);
  });

  it('cancels a running batch: the lines not yet started never run, and the batch ends cancelled', async () => {
    const lines = Array.from({ length: 40 }, (_, i) => chatLine(`slow-${i}`, `s${i}`, { sim: { delay_ms: 150 } }));
    const b = await client.batches.create({ input_file_id: await upload(client, lines), endpoint: '/v1/chat/completions', completion_window: '24h' });
    // Cancelled while running: once the first lines are answered.
    for (;;) {
      if (((await client.batches.retrieve(b.id)).request_counts?.completed ?? 0) >= 1) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const cancelling = await client.batches.cancel(b.id);
    expect(['cancelling', 'cancelled']).toContain(cancelling.status);
    const done = await settled(client, b.id);
    expect(done.status).toBe('cancelled');
    expect(done.cancelled_at).not.toBeNull();
    expect(done.request_counts?.total).toBe(40);
    expect(done.request_counts?.completed).toBeLessThan(40);
    const answered = await linesOf(client, done.output_file_id);
    expect(answered.length).toBe(done.request_counts?.completed);
    // Cancelling a batch that has ended is refused.
    const again = await call(`${gw.url}/${PROJECT}/v1/batches/${b.id}/cancel`, { key: keys.inferenceOnly, method: 'POST', body: {} });
    expectError(again, 409, 'invalid_state');
  });
});

describe('the completion window', () => {
  it('expires a batch whose 24 h ran out: no new line starts, unrun lines are failed batch_expired', async () => {
    const lines = Array.from({ length: 30 }, (_, i) => chatLine(`w${i}`, `w${i}`, { sim: { delay_ms: 100 } }));
    const b = await client.batches.create({ input_file_id: await upload(client, lines), endpoint: '/v1/chat/completions', completion_window: '24h' });
    for (;;) {
      if ((await client.batches.retrieve(b.id)).status === 'in_progress') break;
      await new Promise((r) => setTimeout(r, 10));
    }
    await advanceClock(gw.url, 24 * 3600 * 1000 + 1000);
    const done = await settled(client, b.id);
    expect(done.status).toBe('expired');
    expect(done.expired_at).not.toBeNull();
    const output = await linesOf(client, done.output_file_id);
    const errors = await linesOf(client, done.error_file_id);
    expect(output.length).toBeLessThan(30);
    expect(output.length + errors.length).toBe(30);
    expect(errors.every((l) => l.error?.code === 'batch_expired')).toBe(true);
    expect(done.request_counts).toEqual({ total: 30, completed: output.length, failed: errors.length });
  });
});

describe('batch refusals over raw HTTP', () => {
  it('refuses an unknown file, a file of another purpose, a bad endpoint and window, and unknown batches', async () => {
    const base = `${gw.url}/${PROJECT}/v1/batches`;
    const post = (body: object) => call(base, { key: keys.inferenceOnly, method: 'POST', body });
    expectError(await post({ input_file_id: 'file-nope', endpoint: '/v1/chat/completions', completion_window: '24h' }), 400, 'invalid_request', 'input_file_id');
    const other = await client.files.create({ file: await toFile(Buffer.from('x'), 'notes.txt'), purpose: 'user_data' });
    expectError(await post({ input_file_id: other.id, endpoint: '/v1/chat/completions', completion_window: '24h' }), 400, 'invalid_request', 'input_file_id');
    expectError(await post({ input_file_id: other.id, endpoint: '/v1/completions', completion_window: '24h' }), 400, 'invalid_request', 'endpoint');
    expectError(await post({ input_file_id: other.id, endpoint: '/v1/chat/completions', completion_window: '1h' }), 400, 'invalid_request', 'completion_window');
    const tooMany = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    const refused = await post({ input_file_id: other.id, endpoint: '/v1/chat/completions', completion_window: '24h', metadata: tooMany });
    expectError(refused, 400, 'invalid_request', 'metadata');
    expect(errorOf(refused).message).toBe('metadata must be an object of at most 16 pairs with keys of at most 64 characters and string values of at most 512 characters; got more than 16 pairs.');
    expectError(await call(`${base}/batch_000000000000000000000000`, { key: keys.inferenceOnly }), 404, 'not_found');
    expectError(await call(`${base}?limit=0`, { key: keys.inferenceOnly }), 400, 'invalid_limit', 'limit');
    expectError(await call(`${base}?after=batch_000000000000000000000000`, { key: keys.inferenceOnly }), 400, 'invalid_query', 'after');
    // Another project's key never sees this project's batches.
    expectError(await call(`${base}`, { key: keys.otherProject }), 403, 'project_mismatch');
  });
});

describe('batches and the project limits', () => {
  it('holds lines the request limiter refuses until the window has room again, instead of failing them', async () => {
    // Paid plan, 1 request a minute: a ceiling of 10 (SPEC Limits 2).
    const limited = await startGatewayProcess({ ...testConfig(sim.url, keys, { rateLimit: { requests_per_minute: 1 }, limits: { management_requests_per_minute: 0, files_requests_per_minute: 0 } }) });
    const c = new OpenAI({ baseURL: `${limited.url}/${PROJECT}/v1`, apiKey: keys.inferenceOnly, maxRetries: 0 });
    try {
      const lines = Array.from({ length: 14 }, (_, i) => chatLine(`r${i}`, `r${i}`));
      const b = await c.batches.create({ input_file_id: await upload(c, lines), endpoint: '/v1/chat/completions', completion_window: '24h' });
      for (;;) {
        if (((await c.batches.retrieve(b.id)).request_counts?.completed ?? 0) >= 10) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      // The event that would have let an 11th line through: each of the other 4 refused by the limiter
      // and handed back to wait (pending with a not_before); only then is "still 10" worth asserting.
      expect(await deferredLines(limited.dbPath, b.id)).toBe(4);
      expect(await c.batches.retrieve(b.id)).toMatchObject({ status: 'in_progress', request_counts: { total: 14, completed: 10, failed: 0 } });
      // A live request meanwhile is refused like any other past the ceiling.
      const live = await call(`${limited.url}/${PROJECT}/v1/chat/completions`, { key: keys.inferenceOnly, method: 'POST', body: { model: 'model-chat', messages: [{ role: 'user', content: 'hi' }] } });
      expectError(live, 429, 'rate_limit_exceeded');
      await advanceClock(limited.url, 61_000);
      const done = await settled(c, b.id);
      expect(done).toMatchObject({ status: 'completed', request_counts: { total: 14, completed: 14, failed: 0 } });
      expect((await linesOf(c, done.output_file_id)).map((l) => l.custom_id).sort()).toEqual(lines.map((_, i) => `r${i}`).sort());
    } finally {
      await limited.stop();
    }
  });
});

describe('a batch of 1,000 lines across a SIGKILL', () => {
  it('answers every line exactly once and never sends a line to the model twice', async () => {
    const dir = tempDir();
    const local = await startGatewayProcess({ ...config(), batches: { concurrency: 8 } }, { dir });
    const c = new OpenAI({ baseURL: `${local.url}/${PROJECT}/v1`, apiKey: keys.inferenceOnly, maxRetries: 0 });
    const N = 1000;
    const marker = `m${Date.now().toString(36)}`;
    const ids = Array.from({ length: N }, (_, i) => `${marker}-${i}`);
    const fileId = await upload(c, ids.map((id) => chatLine(id, id, { sim: { delay_ms: 5 } })));

    // What reached the model, read from the simulator's log as the run goes.
    const echoes = watchEchoes(sim.url, marker);

    const b = await c.batches.create({ input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' });
    for (;;) {
      const now = await c.batches.retrieve(b.id);
      if ((now.request_counts?.completed ?? 0) >= 300) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await local.stop('SIGKILL');
    const restarted = await startGatewayProcess({ ...config(), batches: { concurrency: 8 } }, { dir, dbPath: local.dbPath });
    const c2 = new OpenAI({ baseURL: `${restarted.url}/${PROJECT}/v1`, apiKey: keys.inferenceOnly, maxRetries: 0 });
    try {
      const done = await settled(c2, b.id, 120_000);
      // Every line reached the model before its answer was stored: stop()'s last read sees them all.
      await echoes.stop();
      expect(done.status).toBe('completed');
      const output = await linesOf(c2, done.output_file_id);
      const errors = await linesOf(c2, done.error_file_id);
      // Every line exactly once across both files.
      const all = [...output, ...errors].map((l) => l.custom_id);
      expect(all.length).toBe(N);
      expect(new Set(all).size).toBe(N);
      // Only lines in flight at the kill may be failed, as interrupted; at most `concurrency` of them.
      expect(errors.every((l) => l.error?.code === 'interrupted')).toBe(true);
      expect(errors.length).toBeLessThanOrEqual(8);
      expect(done.request_counts).toEqual({ total: N, completed: output.length, failed: errors.length });
      for (const l of output) expect(contentOf(l)).toBe(l.custom_id);
      // No line reached the model twice.
      const upstream = echoes.counts();
      expect([...upstream.entries()].filter(([, n]) => n > 1)).toEqual([]);
      expect(upstream.size).toBeGreaterThanOrEqual(output.length);
    } finally {
      await echoes.stop();
      await restarted.stop();
    }
  }, 180_000);
});
