/**
 * The reference agent's connection (docs/exec.md "Agent protocol", "Reference agent"): connect with the
 * agent key when it has one (else the join key), enroll, heartbeat every third of the lease, run what is
 * dispatched, and reconnect with backoff (1 s, doubling, at most 30 s; back to 1 s once enrolled) when the
 * connection ends, unless the gateway said retrying cannot help: a refused key on the upgrade (401/403),
 * or a close for a protocol error, a rotated key or a deleted agent (4400, 4401, 4403). One exception:
 * `agent_name_in_use` on a reconnect after this run enrolled is the agent's own previous connection, which
 * the gateway has not seen end yet (a half-open TCP connection holds until its lease runs out), so it is
 * retried with the same backoff. Invocations still
 * running when the connection ends are killed: the gateway has failed them already (agent_offline).
 * A gateway stopping gracefully says `draining` first: running commands go on and their results are
 * sent (no dispatch follows on that connection); the 1001 close comes once they are done or at the
 * gateway's drain deadline, and the agent reconnects as after any close (to the restarted gateway, or to
 * another replica behind the same address).
 */
import WebSocket from 'ws';
import { CLOSE } from '../exec/agents/protocol.js';
import type { AgentManifest } from './agent-manifest.js';
import { runTool, type RunningTool } from './tool-runner.js';

export interface AgentClientOptions {
  readonly url: string;
  readonly manifest: AgentManifest;
  readonly enroll: Record<string, unknown>;
  readonly agentKey: string | null;
  readonly joinKey: string | null;
  /** Called once with the agent key a join-key enrollment returns (the caller keeps it). */
  storeAgentKey(key: string): void;
  log(line: string): void;
  /** Retrying cannot help: the caller exits non-zero with this message. */
  fatal(message: string): void;
}

export interface AgentClient {
  stop(): Promise<void>;
}

const FIRST_DELAY_MS = 1000;
const MAX_DELAY_MS = 30_000;
const FINAL_CLOSES = new Set<number>([CLOSE.protocolError, CLOSE.keyRevoked, CLOSE.deleted]);

type GatewayMessage = { type?: unknown; [field: string]: unknown };

export function startAgentClient(o: AgentClientOptions): AgentClient {
  let agentKey = o.agentKey;
  let delay = FIRST_DELAY_MS;
  let stopping = false;
  let ws: WebSocket | null = null;
  let retryTimer: NodeJS.Timeout | null = null;
  let heartbeat: NodeJS.Timeout | null = null;
  let enrolledOnce = false;
  let lastError: string | null = null;
  const running = new Map<string, RunningTool>();

  const send = (socket: WebSocket, message: Record<string, unknown>): void => {
    if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
  };

  function scheduleReconnect(): void {
    if (stopping) return;
    o.log(`reconnecting in ${delay / 1000} s`);
    retryTimer = setTimeout(connect, delay);
    delay = Math.min(delay * 2, MAX_DELAY_MS);
  }

  function dispatch(socket: WebSocket, m: GatewayMessage): void {
    const id = String(m.invocation_id);
    const toolName = String(m.tool_name);
    if (running.has(id)) return;
    const tool = o.manifest.tools.get(toolName);
    if (!tool) return send(socket, { type: 'invocation.result', invocation_id: id, exit_code: 127, error: `this agent has no tool ${toolName}` });
    const args = m.arguments !== null && typeof m.arguments === 'object' ? (m.arguments as Record<string, unknown>) : {};
    const timeoutMs = typeof m.timeout_ms === 'number' ? Math.min(m.timeout_ms, tool.timeoutMs) : tool.timeoutMs;
    o.log(`run ${id} ${toolName}`);
    const run = runTool(tool, args, timeoutMs, {
      output: (data) => {
        if (running.get(id) === run) send(socket, { type: 'invocation.output', invocation_id: id, data });
      },
      done: ({ exitCode, error }) => {
        if (running.get(id) !== run) return;
        running.delete(id);
        o.log(`done ${id} exit ${exitCode}${error ? ` (${error})` : ''}`);
        send(socket, { type: 'invocation.result', invocation_id: id, exit_code: exitCode, error });
      },
    });
    running.set(id, run);
  }

  function onMessage(socket: WebSocket, text: string): void {
    let m: GatewayMessage;
    try {
      m = JSON.parse(text) as GatewayMessage;
    } catch {
      return o.log('ignored a message that is not JSON');
    }
    if (m.type === 'enrolled') {
      if (typeof m.agent_key === 'string') {
        agentKey = m.agent_key;
        o.storeAgentKey(m.agent_key);
      }
      delay = FIRST_DELAY_MS;
      enrolledOnce = true;
      const leaseMs = typeof m.lease_ms === 'number' ? m.lease_ms : 30_000;
      heartbeat = setInterval(() => send(socket, { type: 'heartbeat' }), Math.max(100, Math.floor(leaseMs / 3)));
      o.log(`enrolled as ${String(m.agent_id)} (lease ${leaseMs} ms)`);
    } else if (m.type === 'invocation.dispatch') dispatch(socket, m);
    else if (m.type === 'invocation.cancel') {
      const id = String(m.invocation_id);
      const run = running.get(id);
      running.delete(id);
      if (run) {
        o.log(`cancel ${id}`);
        run.kill('cancelled');
      }
    } else if (m.type === 'draining') {
      o.log(`gateway draining: ${running.size} running invocation(s) finish here; reconnecting once it closes the connection`);
    } else if (m.type === 'error') {
      lastError = String(m.code);
      o.log(`gateway error ${String(m.code)}: ${String(m.message)}`);
    }
  }

  function connect(): void {
    retryTimer = null;
    lastError = null;
    const key = agentKey ?? o.joinKey ?? '';
    const socket = new WebSocket(o.url, { headers: { authorization: `Bearer ${key}` }, handshakeTimeout: 10_000 });
    ws = socket;
    // A refused upgrade: read the error envelope, then end the handshake (the close below decides).
    let refusal: { status: number; message: string; retryAfterMs: number } | null = null;
    socket.on('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        let message = Buffer.concat(chunks).toString('utf8');
        try {
          message = (JSON.parse(message) as { error: { message: string } }).error.message;
        } catch {
          // not the error envelope: keep the text
        }
        const retryAfter = Number(res.headers['retry-after']);
        refusal = { status: res.statusCode ?? 0, message, retryAfterMs: Number.isFinite(retryAfter) ? retryAfter * 1000 : 0 };
        socket.terminate();
      });
    });
    socket.on('open', () => {
      o.log(`connected with the ${agentKey ? 'agent' : 'join'} key`);
      send(socket, o.enroll);
    });
    socket.on('message', (data, isBinary) => {
      if (!isBinary) onMessage(socket, data.toString());
    });
    socket.on('error', (err) => o.log(`connection error: ${err.message}`));
    socket.on('close', (code, reason) => {
      if (heartbeat) clearInterval(heartbeat);
      heartbeat = null;
      for (const run of running.values()) run.kill('disconnected');
      running.clear();
      if (stopping || ws !== socket) return;
      if (refusal !== null) {
        const { status, message } = refusal;
        if (status === 401 || status === 403) return o.fatal(`the gateway refused the ${agentKey ? 'agent' : 'join'} key (${status}): ${message}`);
        o.log(`upgrade refused (${status}): ${message}`);
        // A 429 (the enrollment rate limit) says when a connection is admitted again: not before.
        delay = Math.min(Math.max(delay, refusal.retryAfterMs), 60_000);
        return scheduleReconnect();
      }
      o.log(`disconnected (${code}${reason.length > 0 ? ` ${reason.toString()}` : ''})`);
      if (code === CLOSE.protocolError && lastError === 'agent_name_in_use' && enrolledOnce) scheduleReconnect();
      else if (FINAL_CLOSES.has(code)) o.fatal(`the gateway closed the connection for good (${code} ${reason.toString()})`);
      else scheduleReconnect();
    });
  }

  connect();
  return {
    stop() {
      stopping = true;
      if (retryTimer) clearTimeout(retryTimer);
      for (const run of running.values()) run.kill('agent stopping');
      running.clear();
      const socket = ws;
      if (!socket || socket.readyState === WebSocket.CLOSED) return Promise.resolve();
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          socket.terminate();
          resolve();
        }, 2000);
        socket.once('close', () => {
          clearTimeout(timer);
          resolve();
        });
        socket.close(1000, 'agent stopping');
      });
    },
  };
}
