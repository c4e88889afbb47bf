import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createBatchSystem, INTERRUPTED, type BatchFiles, type BatchSystem } from '../../../src/batches/batch-system.js';
import { newBatchId } from '../../../src/batches/batch-object.js';
import { parseBatchLine } from '../../../src/core/batches/batch-lines.js';
import { createLogger } from '../../../src/log.js';
import type { BatchLineJob, BatchLineResult, BatchLineRunner } from '../../../src/app/batches/batch-line-runner.js';
import type { BatchesStore } from '../../../src/core/store/batches-store.js';
import { createBatchesStore } from '../../../src/store/batches/batches-store.js';
import { createSqliteRunner } from '../../../src/store/sql/sqlite-runner.js';
import { sqliteTransactionEvents } from '../../../src/store/sql/transaction-events.js';
import { openDatabase, type Db } from '../../../src/store/db.js';
import { createSecretBox } from '../../../src/store/secret-box.js';
import { createOutbox } from '../../../src/store/webhooks/webhook-outbox.js';
import { webhookEndpointPrograms } from '../../../src/store/webhooks/webhook-endpoints-store.js';

let db: Db;
let repo: BatchesStore;
let system: BatchSystem | null;
let now: number;
const stored = new Map<string, { projectId: string; filename: string; purpose: string; content: string }>();

const files: BatchFiles = {
  purposeOf: (projectId, id) => Promise.resolve(stored.get(id)?.purpose ?? null),
  read: (projectId, id) => {
    const f = stored.get(id);
    return Promise.resolve(f && f.projectId === projectId ? { purpose: f.purpose, content: f.content } : null);
  },
  create: (projectId, filename, purpose, content) => {
    const id = `file-${stored.size + 1}`;
    stored.set(id, { projectId, filename, purpose, content: content.toString('utf8') });
    return Promise.resolve(id);
  },
  delete: (_projectId, id) => Promise.resolve(void stored.delete(id)),
};

/** Answers each line with its custom id echoed back, as the model would answer it. */
class EchoRunner implements BatchLineRunner {
  calls: BatchLineJob[] = [];
  deferFirst = 0;
  hold: Promise<void> | null = null;
  async run(job: BatchLineJob): Promise<BatchLineResult> {
    if (this.hold) await this.hold;
    const body = JSON.parse(job.body.toString('utf8')) as { messages?: { content: string }[]; model: string };
    if (this.deferFirst > 0) {
      this.deferFirst--;
      // A wait of 0: ready again at once on the frozen test clock.
      return { kind: 'deferred', retryAfterMs: 0 };
    }
    this.calls.push(job);
    if (body.model === 'missing') return { kind: 'answered', statusCode: 404, requestId: 'req_x', body: JSON.stringify({ error: { code: 'model_not_found' } }) };
    return { kind: 'answered', statusCode: 200, requestId: `chatcmpl-${this.calls.length}`, body: JSON.stringify({ echo: body.messages?.[0]?.content }) };
  }
}

function input(lines: readonly string[]): string {
  const id = `file-in-${stored.size + 1}`;
  stored.set(id, { projectId: 'proj_a', filename: 'in.jsonl', purpose: 'batch', content: lines.join('\n') });
  return id;
}

const line = (customId: string, model = 'm') => JSON.stringify({ custom_id: customId, method: 'POST', url: '/v1/chat/completions', body: { model, messages: [{ role: 'user', content: customId }] } });

async function create(fileId: string, expiresIn = 86_400_000): Promise<string> {
  const id = newBatchId();
  await repo.insert({ id, project_id: 'proj_a', key_id: 'key_1', workspace_named: null, workspace_named_by: '', endpoint: '/v1/chat/completions', input_file_id: fileId, completion_window: '24h', metadata: null, created_at: now, expires_at: now + expiresIn });
  return id;
}

function start(runner: BatchLineRunner, concurrency = 4): BatchSystem {
  system = createBatchSystem({ repo: repo, files, runner, concurrency, maxLines: 100, now: () => now, logger: createLogger('silent') });
  void system.start();
  return system;
}

async function until(id: string, statuses: string[]): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (statuses.includes((await repo.get(id))?.status ?? '')) return;
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error(`batch ${id} stayed ${(await repo.get(id))?.status}`);
}

const fileLines = (id: string | null) => (id === null ? [] : (stored.get(id)?.content.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>) ?? []));

beforeEach(() => {
  now = 1_700_000_000_000;
  stored.clear();
  system = null;
  db = openDatabase(':memory:');
  db.prepare("INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES ('proj_a', 'u-a', 'a', 'A', 'paid', 0, 0, 0, 0)").run();
  createSqliteRunner(db).writeSync(webhookEndpointPrograms('sqlite', createSecretBox(randomBytes(32))).insertCapped(
    { id: 'w1', projectId: 'proj_a', url: 'https://93.184.216.34/', description: null, events: ['batch.completed', 'batch.failed', 'batch.cancelled'], isActive: true, metadata: {}, createdAt: 1, updatedAt: 1 },
    'whsec_x',
    20,
  ));
  repo = createBatchesStore({ runner: createSqliteRunner(db), events: sqliteTransactionEvents(createOutbox(db, { now: () => now })), owner: null });
});

afterEach(async () => {
  await system?.close();
});

const eventTypes = () => (db.prepare('SELECT type, body FROM webhook_events').all() as { type: string; body: string }[]).map((e) => ({ type: e.type, data: (JSON.parse(e.body) as { data: Record<string, unknown> }).data }));

describe('batches in the background', () => {
  it('runs every valid line once and writes answers to the output file, invalid lines and error answers to the error file', async () => {
    const runner = new EchoRunner();
    const id = await create(input([line('a'), '{broken', line('b'), line('c', 'missing'), line('a')]));
    start(runner).created(id);
    await until(id, ['completed']);
    const row = (await repo.get(id));
    expect(runner.calls.length).toBe(3);
    const output = fileLines(row?.output_file_id ?? null);
    expect(output.map((l) => [l.custom_id, (l.response as { body: unknown }).body])).toEqual([
      ['a', { echo: 'a' }],
      ['b', { echo: 'b' }],
    ]);
    expect(output[0]).toMatchObject({ response: { status_code: 200, request_id: 'chatcmpl-1' }, error: null });
    const errors = fileLines(row?.error_file_id ?? null);
    expect(errors.map((l) => [l.custom_id, (l.error as { code?: string } | null)?.code ?? (l.response as { status_code: number }).status_code])).toEqual([
      [null, 'invalid_json'],
      ['c', 404],
      ['a', 'duplicate_custom_id'],
    ]);
    expect(await system?.objectOf((await repo.get(id))!)).toMatchObject({ object: 'batch', status: 'completed', request_counts: { total: 5, completed: 2, failed: 3 } });
    expect(eventTypes()).toEqual([{ type: 'batch.completed', data: expect.objectContaining({ id, status: 'completed' }) }]);
  });

  it('fails a batch whose input file cannot be read, with a batch.failed event', async () => {
    const id = await create('file-nope');
    start(new EchoRunner()).created(id);
    await until(id, ['failed']);
    expect(await system?.objectOf((await repo.get(id))!)).toMatchObject({ status: 'failed', errors: { data: [{ code: 'invalid_file' }] } });
    expect(eventTypes().map((e) => e.type)).toEqual(['batch.failed']);
  });

  it('retries a line the limiters refused instead of failing it', async () => {
    const runner = new EchoRunner();
    runner.deferFirst = 3;
    const id = await create(input([line('a'), line('b')]));
    start(runner, 1).created(id);
    await until(id, ['completed']);
    expect(runner.calls.map((c) => JSON.parse(c.body.toString('utf8')).messages[0].content)).toEqual(['a', 'b']);
    expect(await system?.objectOf((await repo.get(id))!)).toMatchObject({ request_counts: { total: 2, completed: 2, failed: 0 } });
  });

  it('resumes after a stop without running a line twice: a line in flight at the stop is failed "interrupted"', async () => {
    const id = await create(input([line('a'), line('b'), line('c')]));
    const seen = new Set<string>();
    await repo.validated(id, [line('a'), line('b'), line('c')].map((t) => parseBatchLine(t, '/v1/chat/completions', seen)), now);
    // The previous process: line 0 answered, line 1 claimed (dispatched) when it died.
    await repo.claim(now);
    await repo.settle(id, 0, { kind: 'answered', statusCode: 200, requestId: 'chatcmpl-old', body: '{"echo":"a"}' });
    await repo.claim(now);
    const runner = new EchoRunner();
    start(runner);
    await until(id, ['completed']);
    expect(runner.calls.map((c) => JSON.parse(c.body.toString('utf8')).messages[0].content)).toEqual(['c']);
    const row = (await repo.get(id));
    expect(fileLines(row?.output_file_id ?? null).map((l) => l.custom_id)).toEqual(['a', 'c']);
    expect(fileLines(row?.error_file_id ?? null)).toEqual([expect.objectContaining({ custom_id: 'b', response: null, error: { code: 'interrupted', message: INTERRUPTED, line: 2 } })]);
  });

  it('cancels: lines in flight finish, the rest never run, and batch.cancelled is sent', async () => {
    const runner = new EchoRunner();
    let release = (): void => undefined;
    runner.hold = new Promise((r) => (release = r));
    const id = await create(input([line('a'), line('b'), line('c'), line('d')]));
    const s = start(runner, 1);
    s.created(id);
    await until(id, ['in_progress']);
    await new Promise((r) => setTimeout(r, 5));
    expect(await s.cancel(id)).toBe(true);
    expect((await repo.get(id))?.status).toBe('cancelling');
    release();
    runner.hold = null;
    await until(id, ['cancelled']);
    expect(runner.calls.length).toBe(1);
    expect(await system?.objectOf((await repo.get(id))!)).toMatchObject({ status: 'cancelled', request_counts: { total: 4, completed: 1, failed: 0 } });
    expect(await s.cancel(id)).toBe(false);
    expect(eventTypes().map((e) => e.type)).toEqual(['batch.cancelled']);
  });

  it('ends a batch cancelled while its input file was being read at once, with no line run', async () => {
    const runner = new EchoRunner();
    let release = (): void => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const slowFiles: BatchFiles = { ...files, read: async (p, id) => (await gate, files.read(p, id)) };
    const id = await create(input([line('a')]));
    system = createBatchSystem({ repo: repo, files: slowFiles, runner, concurrency: 2, maxLines: 100, now: () => now, logger: createLogger('silent') });
    void system.start();
    await new Promise((r) => setTimeout(r, 5));
    expect(await system.cancel(id)).toBe(true);
    release();
    await until(id, ['cancelled']);
    expect(runner.calls).toEqual([]);
    expect(await system.objectOf((await repo.get(id))!)).toMatchObject({ status: 'cancelled', request_counts: { total: 0, completed: 0, failed: 0 }, output_file_id: null, error_file_id: null });
  });

  it('expires a batch whose window ran out: unrun lines go to the error file as batch_expired', async () => {
    const runner = new EchoRunner();
    let release = (): void => undefined;
    runner.hold = new Promise((r) => (release = r));
    const id = await create(input([line('a'), line('b')]), 1000);
    const s = start(runner, 1);
    s.created(id);
    await until(id, ['in_progress']);
    now += 2000;
    release();
    runner.hold = null;
    await until(id, ['expired']);
    const row = (await repo.get(id));
    expect(fileLines(row?.error_file_id ?? null)).toEqual([expect.objectContaining({ custom_id: 'b', error: expect.objectContaining({ code: 'batch_expired' }) })]);
    expect(eventTypes()).toEqual([{ type: 'batch.failed', data: expect.objectContaining({ status: 'expired' }) }]);
  });
});
