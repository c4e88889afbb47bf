/**
 * docs/exec.md "Durability" through real processes: a gateway killed with SIGKILL and started again on
 * the same store. Invocations it had dispatched (or that were running) fail with gateway_restarted;
 * pending approvals keep their chain and deadlines; queued invocations go to the first agent that
 * reconnects; Idempotency-Keys still answer with the first invocation.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, execConfig, makeExecKeys, mintJoinKey, PROJECT, WS_DEFAULT, WS_OPS } from '../helpers/exec-config.js';
import { connectTestAgent, echoTool, type TestAgent } from '../helpers/exec-test-agent.js';
import { advanceClock, call } from '../helpers/http.js';
import { startGatewayProcess, tempDir, type GatewayProcess } from '../helpers/processes.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const keys = makeExecKeys();
const config = execConfig(keys, { webhooks: true, exec: { lease_ms: 1_800_000 } });
const dir = tempDir();
const dbPath = join(dir, 'switchboard.db');
let gw: GatewayProcess;
let receiver: Receiver;
const agents: TestAgent[] = [];

type Invocation = { id: string; status: string; approval_id: string | null; agent_id: string | null; error: { code: string } | null };
type Approval = { id: string; state: string; stage: number; target: string };

const url = (path: string): string => `${gw.url}/${PROJECT}/v1/exec${path}`;

async function invoke(body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Invocation> {
  const res = await call(url('/invocations'), { key: keys.exec, body, headers });
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
  return res.body as Invocation;
}

const get = async (id: string): Promise<Invocation> => (await call(url(`/invocations/${id}`), { key: keys.exec })).body as Invocation;

async function connect(credential: string, name: string, tools: { name: string; risk?: 'read' | 'write' | 'destructive' }[]): Promise<TestAgent> {
  const a = await connectTestAgent(gw.url, PROJECT, credential, { name, tools });
  agents.push(a);
  return a;
}

beforeAll(async () => {
  gw = await startGatewayProcess(config, { dir, dbPath });
  receiver = await startReceiver();
  const hook = await call(`${gw.url}/${PROJECT}/v1/webhooks`, { key: keys.exec, body: { url: receiver.url, events: ['exec.failed'] } });
  expect(hook.status).toBe(201);
});

afterAll(async () => {
  for (const a of agents) a.kill();
  await gw?.stop();
  await receiver?.close();
});

describe('a gateway killed and started again on the same store', () => {
  it('fails what was out, keeps what was waiting, and resumes it', async () => {
    const joinKey = await mintJoinKey(gw.url, keys.exec);
    const worker = await connect(joinKey, 'worker', [echoTool, { name: 'sleep' }, { name: 'rm', risk: 'destructive' }]);
    const deployer = await connect(joinKey, 'deployer', [{ name: 'deploy', risk: 'write' }]);

    const dispatched = await invoke({ workspace_id: WS_DEFAULT, tool_name: 'sleep', timeout_ms: 600_000 }, { 'idempotency-key': 'before-the-crash' });
    const running = await invoke({ workspace_id: WS_DEFAULT, tool_name: 'sleep', timeout_ms: 600_000 });
    await eventually(async () => worker.dispatches.length >= 2, 'two dispatches');
    worker.output(running.id, 'partial');
    await eventually(async () => (await get(running.id)).status === 'running', 'running');
    const pending = await invoke({ workspace_id: WS_OPS, tool_name: 'rm' });
    expect(pending.status).toBe('pending_approval');
    // Queued: accepted once the only agent offering the tool has left.
    const toQueue = await invoke({ workspace_id: WS_OPS, tool_name: 'deploy', timeout_ms: 600_000 });
    await deployer.close();
    const accepted = await call(url(`/approvals/${toQueue.approval_id}/accept`), { key: keys.approver, method: 'POST' });
    expect(accepted.status).toBe(200);
    expect((await get(toQueue.id)).status).toBe('queued');

    expect(await gw.stop('SIGKILL')).toBe('SIGKILL');
    worker.kill();
    gw = await startGatewayProcess(config, { dir, dbPath });
    expect(gw.stdout.join('')).toContain('gateway_restarted');

    for (const inv of [dispatched, running]) expect(await get(inv.id)).toMatchObject({ status: 'failed', error: { code: 'gateway_restarted' } });
    expect((await get(pending.id)).status).toBe('pending_approval');
    expect((await get(toQueue.id)).status).toBe('queued');
    // exec.failed was written with each failure, at the start, for the subscriber.
    const db = new Database(dbPath, { readonly: true });
    const failed = (db.prepare("SELECT body FROM webhook_events WHERE type = 'exec.failed'").all() as { body: string }[]).map((r) => (JSON.parse(r.body) as { data: Record<string, unknown> }).data);
    db.close();
    expect(failed.filter((d) => d.error_code === 'gateway_restarted').map((d) => d.invocation_id).sort()).toEqual([dispatched.id, running.id].sort());

    // The Idempotency-Key outlived the crash.
    const replay = await call(url('/invocations'), { key: keys.exec, body: { workspace_id: WS_DEFAULT, tool_name: 'sleep', timeout_ms: 600_000 }, headers: { 'idempotency-key': 'before-the-crash' } });
    expect(replay.status).toBe(200);
    expect((replay.body as Invocation).id).toBe(dispatched.id);

    // The pending approval's chain goes on, on the new process's clock.
    await advanceClock(gw.url, 60_000);
    await eventually(async () => {
      const list = (await call(url('/approvals?state=pending'), { key: keys.exec })).body as { data: Approval[] };
      return list.data.find((a) => a.id === pending.approval_id && a.stage === 2);
    }, 'escalation after the restart');

    // The queued invocation goes to the agent that comes back (its agent key, same name).
    const back = await connect(deployer.agentKey ?? '', 'deployer', [{ name: 'deploy', risk: 'write' }]);
    const d = await back.waitForDispatch();
    expect(d.invocation_id).toBe(toQueue.id);
    back.result(toQueue.id, 0);
    await eventually(async () => (await get(toQueue.id)).status === 'completed', 'completed after the restart');
  });
});
