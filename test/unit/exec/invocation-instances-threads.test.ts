/**
 * Four gateway instances on one store, for real (issue 12): four worker threads, each with its own
 * connection to one SQLite file, an invocations service of the compiled build (dist/) and an agent of its
 * own, released at the same moment onto the same queued invocations. Before the queued -> dispatched
 * claim was guarded, each thread's retry dispatched most of them to its own agent; and each thread's
 * clock timed out every due invocation, writing `exec.timeout` up to four times.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { execFixture, PROJECT, T0, tool, WS, type Fixture } from './exec-fixture.js';

const THREADS = 4;
const INVOCATIONS = 400;
const TIMEOUT_MS = 5000;
const DIST = new URL('../../../dist/', import.meta.url).href;

// One instance: the service over its own connection, with an agent that takes every dispatch. It waits
// at the barrier (slot 0 of `gate`, released by the test once every thread is ready, counted in slot 1),
// then runs its task once and reports what it sent its agent.
const INSTANCE = `
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  const load = (path) => import(workerData.dist + path);
  const { openDatabase } = await load('src/store/db.js');
  const { createOutbox } = await load('src/store/webhooks/webhook-outbox.js');
  const { InvocationService, DUE_BATCH } = await load('src/exec/invocations/invocation-service.js');
  const { createExecInvocationsStore } = await load('src/store/exec-invocations/exec-invocations-store.js');
  const { createSqliteRunner } = await load('src/store/sql/sqlite-runner.js');
  const { sqliteTransactionEvents } = await load('src/store/sql/transaction-events.js');
  const { invocationIds } = await load('src/core/exec/invocation-ids.js');
  const db = openDatabase(workerData.path);
  const now = () => workerData.now;
  const store = createExecInvocationsStore({ runner: createSqliteRunner(db), events: sqliteTransactionEvents(createOutbox(db, { now })), owner: workerData.owner, now });
  const tool = { name: 'echo', description: '', input_schema: { type: 'object' }, risk: 'read', mcp_visible: false };
  const agent = { id: 'agt_' + workerData.owner, projectId: workerData.project, registrationName: workerData.owner, workspaceIds: [], tools: new Map([['echo', tool]]), running: 0 };
  const sent = [];
  const registry = {
    candidates: () => [agent],
    online: () => [agent],
    dispatch: (_agentId, message) => (sent.push(message.invocationId), true),
    cancel: () => undefined,
    subscribe: () => undefined,
  };
  const policy = { approvalRequiredTools: [], chain: [{ target: 'operators', timeoutMs: 60000 }] };
  const service = new InvocationService({ store, registry, now, ids: invocationIds, policyOf: () => policy, outputCapBytes: 65536 });
  const gate = new Int32Array(workerData.gate);
  Atomics.add(gate, 1, 1);
  Atomics.wait(gate, 0, 0);
  if (workerData.task === 'retry') await service.retryQueued();
  else while ((await service.expireDue()) === DUE_BATCH);
  db.close();
  parentPort.postMessage({ sent });
})().catch((err) => parentPort.postMessage({ error: String(err && err.stack) }));
`;

const dirs: string[] = [];
const fixtures: Fixture[] = [];

afterEach(() => {
  for (const f of fixtures.splice(0)) f.db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A store holding INVOCATIONS queued invocations (their agent was gone at the send). */
async function queuedStore(): Promise<{ path: string; f: Fixture }> {
  const dir = mkdtempSync(join(tmpdir(), 'exec-instances-threads-'));
  dirs.push(dir);
  const path = join(dir, 'store.db');
  const f = execFixture({ path });
  fixtures.push(f);
  f.registry.add('agt_gone', [tool('echo')]);
  f.registry.refuse = true;
  for (let i = 0; i < INVOCATIONS; i++) await f.service.create({ projectId: PROJECT, workspaceId: WS, toolName: 'echo', arguments: {}, timeoutMs: TIMEOUT_MS, idempotency: null, requester: { keyId: 'key_1', userId: null } });
  return { path, f };
}

/** THREADS instances released together onto the store; what each sent its agent, by owner id. */
async function race(path: string, task: 'retry' | 'expire', now: number): Promise<Map<string, string[]>> {
  const gate = new Int32Array(new SharedArrayBuffer(8));
  const owners = Array.from({ length: THREADS }, (_, i) => `inst_${i}`);
  const results = owners.map(
    (owner) =>
      new Promise<[string, string[]]>((resolve, reject) => {
        const w = new Worker(INSTANCE, { eval: true, workerData: { dist: DIST, path, owner, project: PROJECT, now, task, gate: gate.buffer } });
        w.once('message', (m: { sent?: string[]; error?: string }) => (m.error === undefined ? resolve([owner, m.sent ?? []]) : reject(new Error(m.error))));
        w.once('error', reject);
      }),
  );
  while (Atomics.load(gate, 1) < THREADS) await new Promise((r) => setTimeout(r, 5));
  Atomics.store(gate, 0, 1);
  Atomics.notify(gate, 0);
  return new Map(await Promise.all(results));
}

const count = (f: Fixture, type: string): number => f.events().filter(([t]) => t === type).length;

describe('four instances on one store, released together', () => {
  it('dispatch each queued invocation exactly once, to the agent of the instance recorded as its owner', { timeout: 30_000 }, async () => {
    const { path, f } = await queuedStore();
    const sent = await race(path, 'retry', T0);
    const all = [...sent.values()].flat();
    expect(all).toHaveLength(INVOCATIONS);
    expect(new Set(all).size).toBe(INVOCATIONS);
    expect(count(f, 'exec.dispatched')).toBe(INVOCATIONS);
    const owners = new Map(
      (f.db.prepare('SELECT id, owner_instance, agent_id FROM exec_invocations').all() as { id: string; owner_instance: string; agent_id: string }[]).map((r) => [r.id, r]),
    );
    for (const [owner, ids] of sent) {
      for (const id of ids) expect(owners.get(id)).toMatchObject({ owner_instance: owner, agent_id: `agt_${owner}` });
    }
  });

  it('time out each due invocation exactly once: one exec.timeout apiece', { timeout: 30_000 }, async () => {
    const { path, f } = await queuedStore();
    await race(path, 'expire', T0 + TIMEOUT_MS + 1);
    expect(count(f, 'exec.timeout')).toBe(INVOCATIONS);
    expect(count(f, 'exec.failed')).toBe(0);
    expect(f.db.prepare("SELECT COUNT(*) FROM exec_invocations WHERE status = 'failed'").pluck().get()).toBe(INVOCATIONS);
  });
});
