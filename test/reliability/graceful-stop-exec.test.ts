/**
 * A graceful stop (SIGTERM) with execution invocations running (docs/exec.md "Graceful stop"). Regression
 * found from outside: the stop closed the agents' sockets within milliseconds, so every invocation
 * running on them failed agent_offline at once although the drain allows server.drain_timeout_ms. Now the
 * agents are told `draining`, keep their socket while their invocations run, and only what still runs at
 * the drain deadline fails. The test agent answers when the test says so: no sleeps.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execConfig, makeExecKeys, mintJoinKey, PROJECT, WS_DEFAULT } from '../helpers/exec-config.js';
import { connectTestAgent, type TestAgent } from '../helpers/exec-test-agent.js';
import { call } from '../helpers/http.js';
import { exitReport, startGatewayProcess, type GatewayProcess } from '../helpers/processes.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const keys = makeExecKeys();
let receiver: Receiver;
const gateways: GatewayProcess[] = [];
const agents: TestAgent[] = [];

interface StoredInvocation {
  status: string;
  output: string;
  exit_code: number | null;
  error_code: string | null;
}

beforeAll(async () => {
  receiver = await startReceiver();
});

afterAll(async () => {
  for (const a of agents) a.kill();
  for (const gw of gateways) await gw.stop('SIGKILL');
  await receiver?.close();
});

/** A gateway with a webhook subscription to the exec events and an agent offering `build`. */
async function gatewayWithAgent(drainTimeoutMs: number): Promise<{ gw: GatewayProcess; agent: TestAgent }> {
  const base = execConfig(keys, { webhooks: true }) as ReturnType<typeof execConfig> & { server: Record<string, unknown> };
  const gw = await startGatewayProcess({ ...base, server: { ...base.server, drain_timeout_ms: drainTimeoutMs } });
  gateways.push(gw);
  const hook = await call(`${gw.url}/${PROJECT}/v1/webhooks`, { key: keys.exec, body: { url: receiver.url, events: ['exec.completed', 'exec.failed', 'exec.agent_offline'] } });
  expect(hook.status).toBe(201);
  const agent = await connectTestAgent(gw.url, PROJECT, await mintJoinKey(gw.url, keys.exec), { name: 'builder', tools: [{ name: 'build' }] });
  agents.push(agent);
  return { gw, agent };
}

async function invoke(gw: GatewayProcess, agent: TestAgent): Promise<string> {
  const dispatched = agent.dispatches.length;
  const res = await call(`${gw.url}/${PROJECT}/v1/exec/invocations`, { key: keys.exec, body: { workspace_id: WS_DEFAULT, tool_name: 'build', timeout_ms: 600_000 } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const id = (res.body as { id: string }).id;
  await agent.waitForDispatch(dispatched + 1);
  return id;
}

/** What the stopped gateway left in its store: the invocation and the events written for it. */
function readStore(gw: GatewayProcess, id: string): { invocation: StoredInvocation | undefined; events: { type: string; data: Record<string, unknown> }[] } {
  const db = new Database(gw.dbPath, { readonly: true });
  try {
    const invocation = db.prepare('SELECT status, output, exit_code, error_code FROM exec_invocations WHERE id = ?').get(id) as StoredInvocation | undefined;
    const rows = db.prepare('SELECT type, body FROM webhook_events ORDER BY rowid').all() as { type: string; body: string }[];
    const events = rows.map((r) => ({ type: r.type, data: (JSON.parse(r.body) as { data: Record<string, unknown> }).data })).filter((e) => e.data.invocation_id === id);
    return { invocation, events };
  } finally {
    db.close();
  }
}

describe('SIGTERM with an execution invocation running', () => {
  it('lets it finish within the drain: the result is recorded, exec.completed written, the agent closed 1001 and the gateway exits 0 before the deadline', async () => {
    const drainMs = 20_000;
    const { gw, agent } = await gatewayWithAgent(drainMs);
    const id = await invoke(gw, agent);
    agent.output(id, 'compiling\n');

    const stoppedAt = Date.now();
    const exited = gw.stop('SIGTERM');
    await agent.waitForDraining();
    // The tool finishes after the stop began: its output and result still count.
    agent.output(id, 'linking\n');
    agent.result(id, 0, { output: 'done\n' });
    expect(await agent.closed).toMatchObject({ code: 1001 });
    const status = await exited;
    expect(status, exitReport(gw, status)).toBe(0);
    // It stopped once the invocation ended, not at the deadline.
    expect(Date.now() - stoppedAt).toBeLessThan(drainMs);

    const { invocation, events } = readStore(gw, id);
    expect(invocation).toEqual({ status: 'completed', output: 'compiling\nlinking\ndone\n', exit_code: 0, error_code: null });
    expect(events.map((e) => e.type)).toEqual(['exec.completed']);
  });

  it('fails a tool still running at the drain deadline then, not at once: agent_offline, reason gateway_stopping', async () => {
    const drainMs = 1500;
    const { gw, agent } = await gatewayWithAgent(drainMs);
    const id = await invoke(gw, agent);

    const stoppedAt = Date.now();
    const exited = gw.stop('SIGTERM');
    await agent.waitForDraining();
    // Still reported on after the drain began: the invocation had not been failed.
    agent.output(id, 'still building\n');
    const closed = await agent.closed;
    expect(closed.code).toBe(1001);
    // Closed at the deadline (counted from the signal: the gateway's own timer starts later still).
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(drainMs);
    const status = await exited;
    expect(status, exitReport(gw, status)).toBe(0);

    const { invocation, events } = readStore(gw, id);
    expect(invocation).toMatchObject({ status: 'failed', output: 'still building\n', error_code: 'agent_offline' });
    expect(events.map((e) => e.type)).toEqual(['exec.agent_offline', 'exec.failed']);
    expect(events[0]?.data).toMatchObject({ invocation_id: id, agent_id: agent.agentId, reason: 'gateway_stopping' });
    expect(events[1]?.data).toMatchObject({ invocation_id: id, error_code: 'agent_offline' });
  });
});
