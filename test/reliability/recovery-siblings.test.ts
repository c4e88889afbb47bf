/**
 * Issue 12: start-up recovery with several gateway instances on one store. Before the instance registry,
 * a starting gateway failed every dispatched invocation and every running background response it found,
 * as if it were the only process on the store, so a third replica starting beside two live ones failed
 * their work. Now recovery takes only the work of instances that are gone: a starting instance leaves a
 * live sibling's work alone, and when a sibling is killed the survivors fail its work within a heartbeat
 * or two (on one machine through the killed process's pid; the instance lease, 5 s here through
 * SWITCHBOARD_INSTANCE_LEASE_MS, is what a loaded machine's stalled sibling is allowed).
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig } from '../helpers/configs.js';
import { eventually, execConfig, makeExecKeys, mintJoinKey, WS_DEFAULT } from '../helpers/exec-config.js';
import { connectTestAgent, type TestAgent } from '../helpers/exec-test-agent.js';
import { completion, startHeldUpstream, type HeldUpstream } from '../helpers/held-upstream.js';
import { call } from '../helpers/http.js';
import { startGatewayProcess, tempDir, type GatewayProcess } from '../helpers/processes.js';

const LEASE_ENV = { SWITCHBOARD_INSTANCE_LEASE_MS: '5000' };

let held: HeldUpstream;
let processes: GatewayProcess[] = [];
let agents: TestAgent[] = [];

beforeAll(async () => {
  held = await startHeldUpstream();
});

afterEach(async () => {
  for (const a of agents) a.kill();
  for (const p of processes) await p.stop();
  agents = [];
  processes = [];
});

afterAll(async () => {
  await held?.close();
});

async function replicas(config: unknown, n: number, dbPath: string, dir: string): Promise<GatewayProcess[]> {
  const started = await Promise.all(Array.from({ length: n }, () => startGatewayProcess(config, { dir, dbPath, env: LEASE_ENV })));
  processes.push(...started);
  return started;
}

/**
 * A start-up recovery runs before the instance listens; a later one only after a heartbeat's sweep judges
 * an instance dead (and deletes its row). Waits until every instance on the store, the new one included,
 * has beaten (and so swept) since `since`, and checks that none of the three was judged dead.
 */
async function everyInstanceSweptSince(dbPath: string, since: number): Promise<void> {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    const rows = (): { id: string; heartbeat_at: number }[] => db.prepare<[], { id: string; heartbeat_at: number }>('SELECT id, heartbeat_at FROM gateway_instances').all();
    const ids = rows().map((r) => r.id).sort();
    expect(ids).toHaveLength(3);
    await eventually(async () => rows().every((r) => r.heartbeat_at > since), 'a heartbeat of every instance');
    expect(rows().map((r) => r.id).sort()).toEqual(ids);
  } finally {
    db.close();
  }
}

describe('a third instance starting beside two live ones', () => {
  it('leaves a live instance\'s dispatched invocation alone; once that instance is killed, a survivor fails it gateway_restarted', { timeout: 60_000 }, async () => {
    const keys = makeExecKeys();
    const config = execConfig(keys, { exec: { lease_ms: 1_800_000 } });
    const dir = tempDir();
    const dbPath = join(dir, 'siblings.db');
    const [a, b] = (await replicas(config, 2, dbPath, dir)) as [GatewayProcess, GatewayProcess];
    const agent = await connectTestAgent(a.url, PROJECT, await mintJoinKey(a.url, keys.exec), { name: 'worker', tools: [{ name: 'sleep' }] });
    agents.push(agent);
    const created = await call(`${a.url}/${PROJECT}/v1/exec/invocations`, { key: keys.exec, body: { workspace_id: WS_DEFAULT, tool_name: 'sleep', timeout_ms: 600_000 } });
    expect(created.status).toBeLessThan(300);
    const id = (created.body as { id: string }).id;
    await eventually(async () => agent.dispatches.length >= 1, 'the dispatch');
    const status = async (gw: GatewayProcess): Promise<{ status: string; error: { code: string } | null }> =>
      (await call(`${gw.url}/${PROJECT}/v1/exec/invocations/${id}`, { key: keys.exec })).body as { status: string; error: { code: string } | null };

    const [c] = (await replicas(config, 1, dbPath, dir)) as [GatewayProcess];
    await everyInstanceSweptSince(dbPath, Date.now());
    expect((await status(c)).status).toBe('dispatched');
    expect(c.stdout.join('')).not.toContain('gateway_restarted');

    expect(await a.stop('SIGKILL')).toBe('SIGKILL');
    const failed = await eventually(async () => {
      const s = await status(b);
      return s.status === 'failed' ? s : null;
    }, 'the killed instance\'s invocation failed by a survivor');
    expect(failed.error?.code).toBe('gateway_restarted');
  });

  it('leaves a live instance\'s running background response alone; once that instance is killed, a survivor fails it "interrupted"', { timeout: 60_000 }, async () => {
    const keys = makeKeys();
    const config = testConfig(held.url, keys, { security: { allow_private_targets: true, allow_http_targets: true } });
    const dir = tempDir();
    const dbPath = join(dir, 'siblings.db');
    const [a, b] = (await replicas(config, 2, dbPath, dir)) as [GatewayProcess, GatewayProcess];
    const background = async (gw: GatewayProcess, input: string): Promise<string> => {
      const created = await call(`${gw.url}/${PROJECT}/v1/responses`, { key: keys.full, body: { model: 'model-chat', input, background: true } });
      expect(created.status).toBe(200);
      return (created.body as { id: string }).id;
    };
    const status = async (gw: GatewayProcess, id: string): Promise<{ status: string; error: { code: string } | null }> =>
      (await call(`${gw.url}/${PROJECT}/v1/responses/${id}`, { key: keys.full })).body as { status: string; error: { code: string } | null };
    const onA = await background(a, 'a long job on A');
    const heldA = await held.next();
    const onB = await background(b, 'a long job on B');
    const heldB = await held.next();

    const [c] = (await replicas(config, 1, dbPath, dir)) as [GatewayProcess];
    await everyInstanceSweptSince(dbPath, Date.now());
    expect((await status(c, onA)).status).toBe('in_progress');
    expect((await status(c, onB)).status).toBe('in_progress');

    expect(await a.stop('SIGKILL')).toBe('SIGKILL');
    await heldA.abandoned;
    const failed = await eventually(async () => {
      const s = await status(c, onA);
      return s.status === 'failed' ? s : null;
    }, 'the killed instance\'s response failed by a survivor');
    expect(failed.error?.code).toBe('interrupted');
    // B's turn was never touched: it finishes when its model answers.
    expect((await status(c, onB)).status).toBe('in_progress');
    heldB.answer(200, completion('done on B'));
    await eventually(async () => (await status(b, onB)).status === 'completed', 'B\'s response completed');
  });
});
