/**
 * The reference agent (`switchboard agent`) against a real gateway, both real processes: enrollment from
 * a YAML manifest, the stored agent key, a killed agent (SIGKILL) going offline, the same command started
 * again reconnecting as the same agent, a frozen agent (SIGSTOP) losing its lease on the gateway's clock
 * and reconnecting on its own once it runs again, and the refusals that end it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, WS_DEFAULT } from '../helpers/configs.js';
import { advanceClock, call } from '../helpers/http.js';
import { startAgentProcess, type AgentProcess } from '../helpers/exec-agents.js';
import { mintTestKey, startGatewayProcess, startSimulatorProcess, tempDir, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';

const keys = makeKeys();
const EXEC_KEY = mintTestKey('test');
let sim: SimulatorProcess;
let gw: GatewayProcess;
const LEASE_MS = 30_000;
const agents: AgentProcess[] = [];

const MANIFEST = {
  description: 'test runner',
  tools: {
    say: {
      command: ['printf', '%s', '{{text}}'],
      risk: 'read',
      description: 'Prints the text',
      mcp_visible: true,
      input_schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    },
    wipe: { command: ['rm', '-r', '--', '{{path}}'], risk: 'destructive', input_schema: { type: 'object', properties: { path: { type: 'string' } } } },
    list: { command: ['ls', '--', '{{path}}'], risk: 'read', input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } },
    nap: { command: ['sleep', '{{seconds}}'], risk: 'write', input_schema: { type: 'object', properties: { seconds: { type: 'string' } }, required: ['seconds'] } },
  },
};

beforeAll(async () => {
  sim = await startSimulatorProcess();
  const config = testConfig(sim.url, keys, { limits: { management_requests_per_minute: 100_000 }, extraKeys: [{ value: EXEC_KEY, scopes: ['execution'] }] });
  gw = await startGatewayProcess({ ...config, exec: { lease_ms: LEASE_MS } });
});

afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.stop('SIGKILL')));
});

afterAll(async () => {
  await gw?.stop();
  await sim?.stop();
});

const mgmt = (path: string): string => `${gw.url}/${PROJECT}/v1/management/exec${path}`;
const connectUrl = (): string => `${gw.url.replace(/^http/, 'ws')}/${PROJECT}/v1/exec/agents/connect`;
type AgentWire = { id: string; status: string; registration_name: string; description: string | null; tools: { name: string }[] };

async function joinKey(): Promise<{ id: string; value: string }> {
  const res = await call(mgmt('/join-keys'), { key: keys.full, body: { name: 'reference agents' } });
  expect(res.status).toBe(201);
  return res.body as { id: string; value: string };
}

function manifestFile(): string {
  const path = join(tempDir(), 'tools.yaml');
  writeFileSync(path, stringify(MANIFEST));
  return path;
}

function agent(args: string[], env: NodeJS.ProcessEnv = {}): AgentProcess {
  const a = startAgentProcess(['--url', connectUrl(), ...args], env);
  agents.push(a);
  return a;
}

async function status(id: string): Promise<string> {
  const res = await call(mgmt(`/agents/${id}`), { key: keys.full });
  return (res.body as AgentWire).status;
}

describe('reference agent against the gateway', () => {
  it('enrolls from its manifest with a join key, keeps the agent key next to the manifest (0600), and is listed online with its tools', async () => {
    const key = await joinKey();
    const manifest = manifestFile();
    const a = agent(['--join-key', key.value, '--manifest', manifest, '--name', 'ref-1']);
    const [, id] = await a.waitFor(/enrolled as (agt_[0-9a-f]{24})/);
    const res = await call(mgmt(`/agents/${id}`), { key: keys.full });
    expect(res.body).toMatchObject({ registration_name: 'ref-1', description: 'test runner', status: 'online' });
    expect((res.body as AgentWire).tools.map((t) => t.name)).toEqual(['say', 'wipe', 'list', 'nap']);
    expect(statSync(`${manifest}.agent-key`).mode & 0o777).toBe(0o600);
  });

  it('goes offline at once when killed (SIGKILL); the same command started again reconnects as the same agent with the stored key', async () => {
    const key = await joinKey();
    const manifest = manifestFile();
    const args = ['--join-key', key.value, '--manifest', manifest, '--name', 'ref-killed'];
    const first = agent(args);
    const [, id = ''] = await first.waitFor(/enrolled as (agt_[0-9a-f]{24})/);
    expect(await status(id)).toBe('online');
    await first.stop('SIGKILL');
    await expect.poll(() => status(id), { timeout: 3000 }).toBe('offline');

    const second = agent(args);
    await second.waitFor(new RegExp(`connected with the agent key[\\s\\S]*enrolled as ${id}`));
    expect(await status(id)).toBe('online');
    expect(second.stdout.join('')).not.toContain('agent key stored');
  });

  it('loses its lease while frozen (SIGSTOP, the gateway clock moved past lease_ms) and, running again, reconnects with its agent key', async () => {
    const key = await joinKey();
    const a = agent(['--manifest', manifestFile(), '--name', 'ref-frozen'], { SWITCHBOARD_JOIN_KEY: key.value });
    const [, id = ''] = await a.waitFor(/enrolled as (agt_[0-9a-f]{24})/);
    a.proc.kill('SIGSTOP');
    // A heartbeat already on the wire must land before the clock moves.
    await new Promise((r) => setTimeout(r, 200));
    await advanceClock(gw.url, LEASE_MS + 1000);
    await expect.poll(() => status(id), { timeout: 3000 }).toBe('offline');
    const from = a.stdout.join('').length;
    a.proc.kill('SIGCONT');
    await a.waitFor(/disconnected \(4408 lease expired/, from);
    await a.waitFor(new RegExp(`connected with the agent key[\\s\\S]*enrolled as ${id}`), from);
    expect(await status(id)).toBe('online');
  });

  it('exits 1 with the refusal when its name is held by an agent online (agent_name_in_use)', async () => {
    const key = await joinKey();
    const first = agent(['--join-key', key.value, '--manifest', manifestFile(), '--name', 'ref-twin']);
    await first.waitFor(/enrolled as agt_/);
    const second = agent(['--join-key', key.value, '--manifest', manifestFile(), '--name', 'ref-twin']);
    expect(await second.exited).toBe(1);
    expect(second.stdout.join('')).toContain('gateway error agent_name_in_use');
    expect(second.stderr.join('')).toContain('(4400 agent_name_in_use)');
  });

  it('exits 1 when the upgrade refuses its key (a revoked join key), without storing anything', async () => {
    const key = await joinKey();
    expect((await call(mgmt(`/join-keys/${key.id}`), { key: keys.full, method: 'DELETE' })).status).toBe(200);
    const manifest = manifestFile();
    const a = agent(['--join-key', key.value, '--manifest', manifest]);
    expect(await a.exited).toBe(1);
    expect(a.stderr.join('')).toMatch(/refused the join key \(401\): The join key jk_[0-9a-f]{24} was revoked/);
    expect(existsSync(`${manifest}.agent-key`)).toBe(false);
  });

  it('exits 1 when deleted while connected (4403)', async () => {
    const key = await joinKey();
    const a = agent(['--join-key', key.value, '--manifest', manifestFile(), '--name', 'ref-deleted']);
    const [, id] = await a.waitFor(/enrolled as (agt_[0-9a-f]{24})/);
    expect((await call(mgmt(`/agents/${id}`), { key: keys.full, method: 'DELETE' })).status).toBe(200);
    expect(await a.exited).toBe(1);
    expect(a.stderr.join('')).toContain('(4403 agent deleted)');
  });

  it('refuses to start on a manifest the gateway would refuse, naming the field (exit 2)', async () => {
    const path = join(tempDir(), 'bad.yaml');
    writeFileSync(path, stringify({ tools: { say: { command: ['printf', '{{text}}'], risk: 'read', input_schema: { type: 'object', properties: { text: { type: 'strin' } } } } } }));
    const a = agent(['--join-key', `sjk_${'A'.repeat(43)}`, '--manifest', path]);
    expect(await a.exited).toBe(2);
    expect(a.stderr.join('')).toContain('exec_manifest_invalid');
    expect(a.stderr.join('')).toContain('manifest.tools[0].input_schema (say)');
  });
});

type Invocation = { id: string; status: string; output: string; exit_code: number | null; agent_id: string | null; error: { code: string } | null };
const invocations = (path = ''): string => `${gw.url}/${PROJECT}/v1/exec/invocations${path}`;

async function invoke(tool: string, args: Record<string, unknown>): Promise<Invocation> {
  const res = await call(invocations(), { key: EXEC_KEY, body: { workspace_id: WS_DEFAULT, tool_name: tool, arguments: args } });
  expect(res.status).toBe(201);
  return res.body as Invocation;
}

async function settled(id: string): Promise<Invocation> {
  let inv: Invocation | null = null;
  await expect
    .poll(async () => {
      inv = (await call(invocations(`/${id}`), { key: EXEC_KEY })).body as Invocation;
      return ['completed', 'failed', 'cancelled'].includes(inv.status);
    }, { timeout: 10_000 })
    .toBe(true);
  return inv as unknown as Invocation;
}

describe('invocations run by the reference agent (both halves of the surface, real processes)', () => {
  it('completes an invocation: the agent runs the argv with the argument and its stdout is the output', async () => {
    const key = await joinKey();
    const a = agent(['--join-key', key.value, '--manifest', manifestFile(), '--name', 'ref-runner']);
    const [, agentId] = await a.waitFor(/enrolled as (agt_[0-9a-f]{24})/);
    const inv = await invoke('say', { text: 'hello from printf; $(not a shell)' });
    const done = await settled(inv.id);
    expect(done).toMatchObject({ status: 'completed', exit_code: 0, agent_id: agentId, output: 'hello from printf; $(not a shell)', error: null });
  });

  it('fails an invocation whose command exits non-zero (non_zero_exit), with stderr as output', async () => {
    const key = await joinKey();
    const a = agent(['--join-key', key.value, '--manifest', manifestFile(), '--name', 'ref-failing']);
    await a.waitFor(/enrolled as agt_/);
    const done = await settled((await invoke('list', { path: '/nonexistent-dir-xyz' })).id);
    expect(done).toMatchObject({ status: 'failed', exit_code: 2, error: { code: 'non_zero_exit' } });
    expect(done.output).toContain('/nonexistent-dir-xyz');
  });

  it('a cancel through the API reaches the agent, which kills the command', async () => {
    const key = await joinKey();
    const a = agent(['--join-key', key.value, '--manifest', manifestFile(), '--name', 'ref-cancel']);
    await a.waitFor(/enrolled as agt_/);
    const sleeping = (): number => {
      try {
        return execFileSync('pgrep', ['-f', '^sleep 41.5$']).toString().trim().split('\n').filter(Boolean).length;
      } catch {
        return 0;
      }
    };
    const inv = await invoke('nap', { seconds: '41.5' });
    await expect.poll(sleeping, { timeout: 5000 }).toBe(1);
    const res = await call(invocations(`/${inv.id}/cancel`), { key: EXEC_KEY, method: 'POST' });
    expect(res.status).toBe(200);
    expect((res.body as Invocation).status).toBe('cancelled');
    await expect.poll(sleeping, { timeout: 5000 }).toBe(0);
    await a.waitFor(new RegExp(`cancel ${inv.id}`));
  });
});
