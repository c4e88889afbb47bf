/**
 * Execution agents for API tests (docs/exec.md "Agent protocol"): a scripted agent socket (the `ws`
 * client, which sends headers and reads a refused upgrade's answer), and the real reference agent
 * (`switchboard agent`) as a child process of the compiled CLI.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import WebSocket from 'ws';
import { trackChild } from './child-registry.js';
import { CLI } from './processes.js';

export type AgentMessage = Record<string, unknown> & { type: string };

export interface AgentSocket {
  readonly ws: WebSocket;
  readonly messages: AgentMessage[];
  send(message: Record<string, unknown>): void;
  /** The first message of that type not taken yet. */
  next(type: string, timeoutMs?: number): Promise<AgentMessage>;
  closed(): Promise<{ code: number; reason: string }>;
}

export interface RefusedUpgrade {
  readonly refused: true;
  readonly status: number;
  readonly body: { error: { code: string; message: string; type: string; param: string | null } };
}

export function openAgentSocket(url: string, key?: string): Promise<AgentSocket | RefusedUpgrade> {
  const ws = new WebSocket(url, { headers: key === undefined ? {} : { authorization: `Bearer ${key}` } });
  const messages: AgentMessage[] = [];
  const taken = new Set<AgentMessage>();
  const waiters: (() => void)[] = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  ws.on('message', (data) => {
    messages.push(JSON.parse(data.toString()) as AgentMessage);
    waiters.splice(0).forEach((w) => w());
  });
  const socket: AgentSocket = {
    ws,
    messages,
    send: (m) => ws.send(JSON.stringify(m)),
    next(type, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${type} message within ${timeoutMs} ms; got ${JSON.stringify(messages)}`)), timeoutMs);
        const check = (): void => {
          const found = messages.find((m) => m.type === type && !taken.has(m));
          if (!found) return void waiters.push(check);
          taken.add(found);
          clearTimeout(timer);
          resolve(found);
        };
        check();
      });
    },
    closed: () => closed,
  };
  return new Promise((resolve, reject) => {
    ws.on('open', () => resolve(socket));
    ws.on('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        resolve({ refused: true, status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) as RefusedUpgrade['body'] });
        ws.terminate();
      });
    });
    ws.on('error', (err) => reject(err));
  });
}

export function isRefused(s: AgentSocket | RefusedUpgrade): s is RefusedUpgrade {
  return 'refused' in s;
}

/** An open agent socket, or the test fails with the refusal. */
export async function agentSocket(url: string, key: string): Promise<AgentSocket> {
  const s = await openAgentSocket(url, key);
  if (isRefused(s)) throw new Error(`upgrade refused: ${s.status} ${JSON.stringify(s.body)}`);
  return s;
}

export const ECHO_TOOL = {
  name: 'echo',
  description: 'Prints its text',
  input_schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  risk: 'read',
  mcp_visible: true,
};

export function enroll(name: string, extra: Record<string, unknown> = {}, tools: unknown[] = [ECHO_TOOL]): Record<string, unknown> {
  return { type: 'enroll', registration_name: name, manifest: { tools }, ...extra };
}

/** Socket opened, enroll sent, `enrolled` received. */
export async function enrolledAgent(url: string, key: string, name: string, extra: Record<string, unknown> = {}) {
  const socket = await agentSocket(url, key);
  socket.send(enroll(name, extra));
  const enrolled = await socket.next('enrolled');
  return { socket, enrolled: enrolled as AgentMessage & { agent_id: string; agent_key?: string; lease_ms: number } };
}

export interface AgentProcess {
  readonly proc: ChildProcess;
  readonly stdout: string[];
  readonly stderr: string[];
  /** Resolves with the first match in stdout after `from` characters (default: from the start). */
  waitFor(pattern: RegExp, from?: number, timeoutMs?: number): Promise<RegExpMatchArray>;
  readonly exited: Promise<number | string>;
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

export function startAgentProcess(args: string[], env: NodeJS.ProcessEnv = {}): AgentProcess {
  const proc = trackChild(spawn(process.execPath, [CLI, 'agent', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
  const stdout: string[] = [];
  const stderr: string[] = [];
  proc.stdout?.on('data', (d: Buffer) => stdout.push(d.toString()));
  proc.stderr?.on('data', (d: Buffer) => stderr.push(d.toString()));
  const exited = new Promise<number | string>((resolve) => proc.on('exit', (code, sig) => resolve(code ?? sig ?? 'unknown')));
  return {
    proc,
    stdout,
    stderr,
    exited,
    async waitFor(pattern, from = 0, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const m = stdout.join('').slice(from).match(pattern);
        if (m) return m;
        if (proc.exitCode !== null || proc.signalCode !== null || Date.now() > deadline) {
          throw new Error(`agent output never matched ${pattern}:\n${stdout.join('')}\n${stderr.join('')}`);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    stop(signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
}
