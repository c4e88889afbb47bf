/**
 * Invocations run by the reference agent (`switchboard agent`, a real process) running real commands,
 * against a real gateway: output streamed back, exit codes, a cancel that stops the command, and the agent
 * killed (SIGKILL) in the middle of one.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgentProcess, type AgentProcess } from '../helpers/exec-agents.js';
import { eventually, execConfig, makeExecKeys, mintJoinKey, PROJECT, WS_DEFAULT } from '../helpers/exec-config.js';
import { call, expectError } from '../helpers/http.js';
import { startGatewayProcess, tempDir, type GatewayProcess } from '../helpers/processes.js';
import { parseSse } from '../helpers/sse.js';

const keys = makeExecKeys();
const text = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] };
const seconds = { type: 'object', properties: { seconds: { type: 'string' } }, required: ['seconds'] };
const MANIFEST = {
  description: 'invocations test runner',
  tools: {
    say: { command: ['printf', '%s', '{{text}}'], risk: 'read', description: 'Prints the text', input_schema: text },
    fail: { command: ['false'], risk: 'read' },
    nap: { command: ['sleep', '{{seconds}}'], risk: 'write', input_schema: seconds },
    brief: { command: ['printf', '%s', '{{text}}'], risk: 'read', input_schema: text, output_cap_bytes: 10 },
  },
};

let gw: GatewayProcess;
let agent: AgentProcess;
let agentId: string;
const dir = tempDir();

type Invocation = { id: string; status: string; exit_code: number | null; output: string; output_truncated: boolean; error: { code: string; message: string } | null; agent_id: string | null };

const url = (path: string): string => `${gw.url}/${PROJECT}/v1/exec${path}`;

async function start(name: string): Promise<{ agent: AgentProcess; id: string }> {
  const manifest = join(dir, `${name}.yaml`);
  writeFileSync(manifest, stringify({ ...MANIFEST, name }));
  const a = startAgentProcess(['--url', `${gw.url.replace(/^http/, 'ws')}/${PROJECT}/v1/exec/agents/connect`, '--manifest', manifest], {
    SWITCHBOARD_JOIN_KEY: await mintJoinKey(gw.url, keys.exec),
  });
  const [, id = ''] = await a.waitFor(/enrolled as (agt_[0-9a-f]{24})/);
  return { agent: a, id };
}

async function invoke(tool: string, args: Record<string, unknown>): Promise<Invocation> {
  const res = await call(url('/invocations'), { key: keys.exec, body: { workspace_id: WS_DEFAULT, tool_name: tool, arguments: args, timeout_ms: 60_000 } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as Invocation;
}

async function settled(id: string, status: string): Promise<Invocation> {
  return eventually(async () => {
    const inv = (await call(url(`/invocations/${id}`), { key: keys.exec })).body as Invocation;
    return inv.status === status ? inv : null;
  }, `${id} ${status}`, 10_000);
}

beforeAll(async () => {
  gw = await startGatewayProcess(execConfig(keys, { exec: { lease_ms: 30_000 } }));
  ({ agent, id: agentId } = await start('runner'));
});

afterAll(async () => {
  await agent?.stop('SIGKILL');
  await gw?.stop();
});

describe('the reference agent running invocations', () => {
  it('runs a command and returns its output and exit code 0', async () => {
    const inv = await invoke('say', { text: 'hello from printf' });
    expect(inv.agent_id).toBe(agentId);
    expect(await settled(inv.id, 'completed')).toMatchObject({ exit_code: 0, output: 'hello from printf', error: null });
  });

  it('says output_truncated when the agent dropped output past its own cap, below the gateway\'s', async () => {
    const cut = await settled((await invoke('brief', { text: 'x'.repeat(50) })).id, 'completed');
    expect(cut).toMatchObject({ output: 'x'.repeat(10), output_truncated: true });
    const whole = await settled((await invoke('brief', { text: 'y'.repeat(10) })).id, 'completed');
    expect(whole).toMatchObject({ output: 'y'.repeat(10), output_truncated: false });
  });

  it('streams the command output over SSE and ends with [DONE]', async () => {
    const inv = await invoke('say', { text: 'streamed' });
    const res = await fetch(url(`/invocations/${inv.id}/events`), { headers: { authorization: `Bearer ${keys.exec}` } });
    const frames = parseSse(await res.text()).map((f) => f.data);
    expect(frames.at(-1)).toBe('[DONE]');
    // Followed while it runs, the completed status is the last frame before [DONE]; opened once the agent has
    // finished it (printf is quick, and a loaded machine is slow to follow), the status comes first, then the
    // output and the end (docs/exec.md). Either way it is the stream's last status.
    const completed = JSON.stringify({ type: 'status', status: 'completed' });
    expect(frames.filter((f) => f.startsWith('{"type":"status"')).at(-1)).toBe(completed);
    expect([0, frames.length - 2]).toContain(frames.indexOf(completed));
    const output = frames.filter((f) => f.startsWith('{"type":"output"')).map((f) => (JSON.parse(f) as { data: string }).data).join('');
    expect(output).toBe('streamed');
  });

  it('fails a command that exits non-zero: non_zero_exit with its exit code', async () => {
    const inv = await invoke('fail', {});
    expect(await settled(inv.id, 'failed')).toMatchObject({ exit_code: 1, error: { code: 'non_zero_exit' } });
  });

  it('refuses arguments the manifest schema does not allow, before any command runs', async () => {
    const res = await call(url('/invocations'), { key: keys.exec, body: { workspace_id: WS_DEFAULT, tool_name: 'nap', arguments: { seconds: 5 } } });
    expectError(res, 400, 'invalid_body', 'arguments/seconds');
  });

  it('cancels a running command (the agent is told and stops it)', async () => {
    const inv = await invoke('nap', { seconds: '30' });
    await agent.waitFor(new RegExp(`run ${inv.id} nap`));
    const res = await call(url(`/invocations/${inv.id}/cancel`), { key: keys.exec, method: 'POST' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'cancelled' });
    await agent.waitFor(new RegExp(`cancel ${inv.id}`));
  });

  it('fails an invocation whose agent is killed mid-command: agent_offline', async () => {
    const doomed = await start('doomed');
    const res = await call(url('/invocations'), { key: keys.exec, body: { workspace_id: WS_DEFAULT, tool_name: 'nap', arguments: { seconds: '30' }, timeout_ms: 60_000 } });
    const inv = res.body as Invocation;
    // Two agents offer nap: the least busy (or first by id) got it; kill that one.
    const target = inv.agent_id === doomed.id ? doomed.agent : agent;
    await target.waitFor(new RegExp(`run ${inv.id} nap`));
    await target.stop('SIGKILL');
    const failed = await settled(inv.id, 'failed');
    expect(failed.error?.code).toBe('agent_offline');
    if (target === agent) agent = doomed.agent;
    else await doomed.agent.stop('SIGKILL');
  });
});
