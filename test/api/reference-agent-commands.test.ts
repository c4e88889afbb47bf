/**
 * The reference agent (`switchboard agent`, a real process) running real commands, driven by a scripted
 * gateway: a WebSocket server in this test that speaks docs/exec.md's protocol, so every dispatch, cancel
 * and disconnect is the test's to choose. Commands are argv templates spawned without a shell.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { startAgentProcess, type AgentMessage, type AgentProcess } from '../helpers/exec-agents.js';
import { tempDir } from '../helpers/processes.js';

const JOIN_KEY = `sjk_${'J'.repeat(43)}`;
const AGENT_KEY = `sak_${'K'.repeat(43)}`;
const text = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] };
const MANIFEST = {
  name: 'runner-1',
  tools: {
    say: { command: ['printf', '%s', '{{text}}'], risk: 'read', description: 'Prints the text', input_schema: text, mcp_visible: true },
    short: { command: ['printf', '%s', '{{text}}'], risk: 'read', output_cap_bytes: 10, input_schema: text },
    list: { command: ['ls', '{{path}}'], risk: 'read', input_schema: { type: 'object', properties: { path: { type: 'string' } } } },
    nap: { command: ['sleep', '{{seconds}}'], risk: 'write', timeout_ms: 400, input_schema: { type: 'object', properties: { seconds: { type: 'string' } } } },
    long_nap: { command: ['sleep', '{{seconds}}'], risk: 'write', input_schema: { type: 'object', properties: { seconds: { type: 'string' } } } },
    fail: { command: ['false'], risk: 'read' },
    env: { command: ['printenv'], risk: 'read' },
    missing: { command: ['/nonexistent/program-xyz'], risk: 'read' },
  },
};

interface Connection {
  readonly ws: WebSocket;
  readonly authorization: string | undefined;
  readonly messages: AgentMessage[];
  next(match: (m: AgentMessage) => boolean, timeoutMs?: number): Promise<AgentMessage>;
  send(m: Record<string, unknown>): void;
}

let server: WebSocketServer;
/** While set, upgrades are refused with 503 (a gateway that is draining or restarting). */
let refuseUpgrades = false;
/** While set, an enroll is answered agent_name_in_use (the gateway still holds the agent's old connection). */
let nameInUse = false;
const connections: Connection[] = [];
const connectionWaiters: (() => void)[] = [];
let agent: AgentProcess;
let dir: string;

function accept(ws: WebSocket, req: IncomingMessage): void {
  const messages: AgentMessage[] = [];
  const waiters: (() => void)[] = [];
  ws.on('message', (data) => {
    const m = JSON.parse(data.toString()) as AgentMessage;
    messages.push(m);
    if (m.type === 'enroll' && nameInUse) {
      ws.send(JSON.stringify({ type: 'error', code: 'agent_name_in_use', message: 'Agent agt_000000000000000000000001 (runner-1) is already connected.' }));
      ws.close(4400, 'agent_name_in_use');
    } else if (m.type === 'enroll') {
      // The first connection enrolls with the join key and is given an agent key, later ones must use it.
      const first = req.headers.authorization === `Bearer ${JOIN_KEY}`;
      ws.send(JSON.stringify({ type: 'enrolled', agent_id: 'agt_000000000000000000000001', ...(first ? { agent_key: AGENT_KEY } : {}), lease_ms: 3000 }));
    }
    waiters.splice(0).forEach((w) => w());
  });
  connections.push({
    ws,
    authorization: req.headers.authorization,
    messages,
    send: (m) => ws.send(JSON.stringify(m)),
    next(match, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching message within ${timeoutMs} ms; got ${JSON.stringify(messages)}`)), timeoutMs);
        const check = (): void => {
          const found = messages.find(match);
          if (!found) return void waiters.push(check);
          clearTimeout(timer);
          resolve(found);
        };
        check();
      });
    },
  });
  connectionWaiters.splice(0).forEach((w) => w());
}

async function connection(n: number, timeoutMs = 10_000): Promise<Connection> {
  const deadline = Date.now() + timeoutMs;
  while (connections.length <= n) {
    if (Date.now() > deadline) throw new Error(`connection ${n} never came:\n${agent.stdout.join('')}\n${agent.stderr.join('')}`);
    await new Promise<void>((r) => {
      connectionWaiters.push(r);
      setTimeout(r, 100);
    });
  }
  return connections[n] as Connection;
}

const current = (): Connection => connections.at(-1) as Connection;
let seq = 0;
function dispatch(tool: string, args: Record<string, unknown>, timeoutMs = 10_000): string {
  const id = `inv_${String(++seq).padStart(24, '0')}`;
  current().send({ type: 'invocation.dispatch', invocation_id: id, tool_name: tool, arguments: args, timeout_ms: timeoutMs });
  return id;
}
const resultOf = (id: string, timeoutMs?: number) => current().next((m) => m.type === 'invocation.result' && m.invocation_id === id, timeoutMs);
const outputOf = (id: string): string => current().messages.filter((m) => m.type === 'invocation.output' && m.invocation_id === id).map((m) => String(m.data)).join('');
const childSleeps = (seconds: string): number => {
  try {
    return execFileSync('pgrep', ['-f', `^sleep ${seconds}$`]).toString().trim().split('\n').filter(Boolean).length;
  } catch {
    return 0;
  }
};

beforeAll(async () => {
  server = new WebSocketServer({ port: 0, host: '127.0.0.1', verifyClient: (_info, done) => (refuseUpgrades ? done(false, 503, 'draining') : done(true)) });
  server.on('connection', accept);
  await new Promise((r) => server.once('listening', r));
  dir = tempDir();
  const manifest = join(dir, 'tools.yaml');
  writeFileSync(manifest, stringify(MANIFEST));
  const { port } = server.address() as AddressInfo;
  agent = startAgentProcess(['--url', `ws://127.0.0.1:${port}/proj_test/v1/exec/agents/connect`, '--manifest', manifest], { SWITCHBOARD_JOIN_KEY: JOIN_KEY });
  await agent.waitFor(/enrolled as agt_/);
});

afterAll(async () => {
  await agent?.stop();
  for (const c of connections) c.ws.terminate();
  await new Promise((r) => server?.close(r));
});

describe('reference agent: enrollment', () => {
  it('enrolls with the join key and its manifest: the YAML tools, without their commands, defaults filled', async () => {
    const first = await connection(0);
    expect(first.authorization).toBe(`Bearer ${JOIN_KEY}`);
    const enroll = first.messages[0] as AgentMessage & { manifest: { tools: Record<string, unknown>[] } };
    expect(enroll).toMatchObject({ type: 'enroll', registration_name: 'runner-1' });
    expect(enroll.manifest.tools.map((t) => t.name)).toEqual(Object.keys(MANIFEST.tools));
    expect(enroll.manifest.tools[0]).toEqual({ name: 'say', description: 'Prints the text', input_schema: text, risk: 'read', mcp_visible: true });
    expect(enroll.manifest.tools[5]).toEqual({ name: 'fail', description: '', input_schema: { type: 'object' }, risk: 'read', mcp_visible: false });
    expect(JSON.stringify(enroll)).not.toContain('printf');
  });

  it('heartbeats every third of the lease', async () => {
    await current().next((m) => m.type === 'heartbeat', 3000);
  });
});

describe('reference agent: running commands', () => {
  it('runs the argv with the argument filled in, streams stdout, and reports exit code 0', async () => {
    const id = dispatch('say', { text: 'hello world' });
    expect(await resultOf(id)).toEqual({ type: 'invocation.result', invocation_id: id, exit_code: 0, error: null });
    expect(outputOf(id)).toBe('hello world');
  });

  it('never uses a shell: shell syntax in an argument is printed as text', async () => {
    const hostile = '$(touch pwned); `id` | cat && echo x > y';
    const id = dispatch('say', { text: hostile });
    await resultOf(id);
    expect(outputOf(id)).toBe(hostile);
  });

  it('reports a non-zero exit code with stderr as output', async () => {
    const id = dispatch('list', { path: join(dir, 'does-not-exist') });
    expect(await resultOf(id)).toMatchObject({ exit_code: 2, error: null });
    expect(outputOf(id)).toContain('does-not-exist');
    const failed = dispatch('fail', {});
    expect(await resultOf(failed)).toMatchObject({ exit_code: 1 });
  });

  it("runs commands without the agent's own keys in their environment", async () => {
    const id = dispatch('env', {});
    await resultOf(id);
    expect(outputOf(id)).toContain('PATH=');
    expect(outputOf(id)).not.toContain('SWITCHBOARD_JOIN_KEY');
    expect(outputOf(id)).not.toContain(JOIN_KEY);
  });

  it('stops sending output past output_cap_bytes', async () => {
    const id = dispatch('short', { text: 'x'.repeat(100) });
    expect(await resultOf(id)).toMatchObject({ exit_code: 0 });
    expect(outputOf(id)).toBe('x'.repeat(10));
  });

  it('kills a command past its timeout (the shorter of the tool and the dispatch): 128 + SIGTERM', async () => {
    const started = Date.now();
    const id = dispatch('nap', { seconds: '30.1' });
    expect(await resultOf(id)).toEqual({ type: 'invocation.result', invocation_id: id, exit_code: 143, error: 'timed out after 400 ms' });
    expect(Date.now() - started).toBeLessThan(5000);
    const shorter = dispatch('long_nap', { seconds: '30.2' }, 300);
    expect(await resultOf(shorter)).toMatchObject({ exit_code: 143, error: 'timed out after 300 ms' });
  });

  it('fails an invocation whose argument is missing (2), whose program cannot start (127), or whose tool it does not have (127)', async () => {
    expect(await resultOf(dispatch('say', {}))).toMatchObject({ exit_code: 2, error: expect.stringContaining('needs the argument text') });
    expect(await resultOf(dispatch('missing', {}))).toMatchObject({ exit_code: 127, error: expect.stringContaining('cannot run /nonexistent/program-xyz') });
    expect(await resultOf(dispatch('nope', {}))).toMatchObject({ exit_code: 127, error: 'this agent has no tool nope' });
  });

  it('fails (127) an argument spawn refuses outright (a NUL byte, an argv past the kernel limit) and keeps running', async () => {
    // spawn throws these synchronously instead of emitting 'error': uncaught, one invocation took the agent down.
    expect(await resultOf(dispatch('say', { text: 'a\u0000b' }))).toMatchObject({ exit_code: 127, error: expect.stringContaining('cannot run printf') });
    expect(await resultOf(dispatch('say', { text: 'x'.repeat(2_000_000) }))).toMatchObject({ exit_code: 127, error: expect.stringContaining('cannot run printf') });
    const after = dispatch('say', { text: 'still here' });
    expect(await resultOf(after)).toMatchObject({ exit_code: 0 });
    expect(outputOf(after)).toBe('still here');
  });

  it('cancel kills the command and sends no result', async () => {
    const id = dispatch('long_nap', { seconds: '30.3' });
    await expect.poll(() => childSleeps('30.3')).toBe(1);
    current().send({ type: 'invocation.cancel', invocation_id: id });
    await expect.poll(() => childSleeps('30.3'), { timeout: 5000 }).toBe(0);
    await agent.waitFor(new RegExp(`cancel ${id}`));
    const after = dispatch('say', { text: 'still here' });
    await resultOf(after);
    expect(current().messages.some((m) => m.type === 'invocation.result' && m.invocation_id === id)).toBe(false);
  });
});

describe('reference agent: reconnecting', () => {
  it('stored the agent key next to the manifest, mode 0600', async () => {
    const { readFileSync, statSync } = await import('node:fs');
    const file = join(dir, 'tools.yaml.agent-key');
    expect(readFileSync(file, 'utf8').trim()).toBe(AGENT_KEY);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(agent.stdout.join('')).not.toContain(AGENT_KEY);
  });

  it('on a dropped connection, kills what it was running and reconnects after 1 s with the agent key', async () => {
    const before = connections.length;
    dispatch('long_nap', { seconds: '30.4' });
    await expect.poll(() => childSleeps('30.4')).toBe(1);
    const dropped = Date.now();
    current().ws.close(1001, 'gateway restarting');
    await expect.poll(() => childSleeps('30.4'), { timeout: 5000 }).toBe(0);
    const next = await connection(before);
    expect(Date.now() - dropped).toBeGreaterThanOrEqual(900);
    expect(next.authorization).toBe(`Bearer ${AGENT_KEY}`);
    await next.next((m) => m.type === 'enroll');
    const id = dispatch('say', { text: 'back' });
    await resultOf(id);
    expect(outputOf(id)).toBe('back');
  });

  it('on draining (a gateway stopping gracefully), finishes the running command and sends its result, then reconnects after the 1001 close', async () => {
    const from = agent.stdout.join('').length;
    const before = connections.length;
    const id = dispatch('long_nap', { seconds: '0.6' });
    await expect.poll(() => childSleeps('0.6')).toBe(1);
    current().send({ type: 'draining' });
    await agent.waitFor(/gateway draining: 1 running invocation/, from);
    expect(await resultOf(id)).toMatchObject({ exit_code: 0 });
    current().ws.close(1001, 'server shutting down');
    await (await connection(before)).next((m) => m.type === 'enroll');
  });

  it('backs off 1 s, 2 s, 4 s while the upgrade is refused with a 5xx, and connects once it is accepted', async () => {
    const from = agent.stdout.join('').length;
    const before = connections.length;
    refuseUpgrades = true;
    current().ws.close(1001, 'gateway restarting');
    const log = await agent.waitFor(/reconnecting in 4 s/, from, 10_000);
    refuseUpgrades = false;
    const lines = agent.stdout.join('').slice(from, from + (log.index ?? 0) + log[0].length);
    expect(lines.match(/reconnecting in \d+ s|upgrade refused \(\d+\)/g)).toEqual([
      'reconnecting in 1 s',
      'upgrade refused (503)',
      'reconnecting in 2 s',
      'upgrade refused (503)',
      'reconnecting in 4 s',
    ]);
    await (await connection(before)).next((m) => m.type === 'enroll');
  });

  it('retries agent_name_in_use on a reconnect (its own connection the gateway has not seen end), with the backoff', async () => {
    const from = agent.stdout.join('').length;
    const before = connections.length;
    nameInUse = true;
    current().ws.close(1001, 'gateway restarting');
    await agent.waitFor(/gateway error agent_name_in_use[\s\S]*reconnecting in 2 s/, from);
    nameInUse = false;
    const mark = agent.stdout.join('').length;
    await (await connection(before + 1)).next((m) => m.type === 'enroll');
    await agent.waitFor(/enrolled as agt_/, mark);
    expect(agent.proc.exitCode).toBeNull();
  });

  it('exits 1 when a close says retrying cannot help (4403: deleted)', async () => {
    current().ws.close(4403, 'agent deleted');
    expect(await agent.exited).toBe(1);
    expect(agent.stderr.join('')).toContain('closed the connection for good (4403 agent deleted)');
  });
});
