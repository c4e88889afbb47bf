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
import type { IncomingMessage } from 'node:http';
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
  const connection = new AgentConnection(o);
  connection.connect();
  return { stop: () => connection.stop() };
}

/** What a refused upgrade said: its status, the error envelope's message and its Retry-After. */
interface Refusal {
  readonly status: number;
  readonly message: string;
  readonly retryAfterMs: number;
}

function send(socket: WebSocket, message: Record<string, unknown>): void {
  if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
}

/** Reads a refused upgrade's body to its end, then hands over what it said. */
function readRefusal(res: IncomingMessage, done: (refusal: Refusal) => void): void {
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
    done({ status: res.statusCode ?? 0, message, retryAfterMs: Number.isFinite(retryAfter) ? retryAfter * 1000 : 0 });
  });
}

/** The agent's state across its connections: the key it presents, the backoff, the invocations it runs. */
class AgentConnection {
  readonly #o: AgentClientOptions;
  #agentKey: string | null;
  #delay = FIRST_DELAY_MS;
  #stopping = false;
  #ws: WebSocket | null = null;
  #retryTimer: NodeJS.Timeout | null = null;
  #heartbeat: NodeJS.Timeout | null = null;
  #enrolledOnce = false;
  #lastError: string | null = null;
  readonly #running = new Map<string, RunningTool>();

  constructor(o: AgentClientOptions) {
    this.#o = o;
    this.#agentKey = o.agentKey;
  }

  connect(): void {
    this.#retryTimer = null;
    this.#lastError = null;
    const key = this.#agentKey ?? this.#o.joinKey ?? '';
    const socket = new WebSocket(this.#o.url, { headers: { authorization: `Bearer ${key}` }, handshakeTimeout: 10_000 });
    this.#ws = socket;
    // A refused upgrade: read the error envelope, then end the handshake (the close below decides).
    let refusal: Refusal | null = null;
    socket.on('unexpected-response', (_req, res) => {
      readRefusal(res, (r) => {
        refusal = r;
        socket.terminate();
      });
    });
    socket.on('open', () => {
      this.#o.log(`connected with the ${this.#agentKey ? 'agent' : 'join'} key`);
      send(socket, this.#o.enroll);
    });
    socket.on('message', (data, isBinary) => {
      if (!isBinary) this.#onMessage(socket, data.toString());
    });
    socket.on('error', (err) => this.#o.log(`connection error: ${err.message}`));
    socket.on('close', (code, reason) => this.#onClose(socket, code, reason, refusal));
  }

  stop(): Promise<void> {
    this.#stopping = true;
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#killAll('agent stopping');
    const socket = this.#ws;
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
  }

  #scheduleReconnect(): void {
    if (this.#stopping) return;
    this.#o.log(`reconnecting in ${this.#delay / 1000} s`);
    this.#retryTimer = setTimeout(() => this.connect(), this.#delay);
    this.#delay = Math.min(this.#delay * 2, MAX_DELAY_MS);
  }

  #killAll(reason: string): void {
    for (const run of this.#running.values()) run.kill(reason);
    this.#running.clear();
  }

  #onMessage(socket: WebSocket, text: string): void {
    let m: GatewayMessage;
    try {
      m = JSON.parse(text) as GatewayMessage;
    } catch {
      return this.#o.log('ignored a message that is not JSON');
    }
    if (m.type === 'enrolled') this.#onEnrolled(socket, m);
    else if (m.type === 'invocation.dispatch') this.#dispatch(socket, m);
    else if (m.type === 'invocation.cancel') this.#cancel(String(m.invocation_id));
    else if (m.type === 'draining') {
      this.#o.log(`gateway draining: ${this.#running.size} running invocation(s) finish here; reconnecting once it closes the connection`);
    } else if (m.type === 'error') {
      this.#lastError = String(m.code);
      this.#o.log(`gateway error ${String(m.code)}: ${String(m.message)}`);
    }
  }

  #onEnrolled(socket: WebSocket, m: GatewayMessage): void {
    if (typeof m.agent_key === 'string') {
      this.#agentKey = m.agent_key;
      this.#o.storeAgentKey(m.agent_key);
    }
    this.#delay = FIRST_DELAY_MS;
    this.#enrolledOnce = true;
    const leaseMs = typeof m.lease_ms === 'number' ? m.lease_ms : 30_000;
    this.#heartbeat = setInterval(() => send(socket, { type: 'heartbeat' }), Math.max(100, Math.floor(leaseMs / 3)));
    this.#o.log(`enrolled as ${String(m.agent_id)} (lease ${leaseMs} ms)`);
  }

  #dispatch(socket: WebSocket, m: GatewayMessage): void {
    const id = String(m.invocation_id);
    const toolName = String(m.tool_name);
    if (this.#running.has(id)) return;
    const tool = this.#o.manifest.tools.get(toolName);
    if (!tool) return send(socket, { type: 'invocation.result', invocation_id: id, exit_code: 127, error: `this agent has no tool ${toolName}` });
    const args = m.arguments !== null && typeof m.arguments === 'object' ? (m.arguments as Record<string, unknown>) : {};
    const timeoutMs = typeof m.timeout_ms === 'number' ? Math.min(m.timeout_ms, tool.timeoutMs) : tool.timeoutMs;
    this.#o.log(`run ${id} ${toolName}`);
    const run = runTool(tool, args, timeoutMs, {
      output: (data) => {
        if (this.#running.get(id) === run) send(socket, { type: 'invocation.output', invocation_id: id, data });
      },
      done: ({ exitCode, error, outputTruncated }) => {
        if (this.#running.get(id) !== run) return;
        this.#running.delete(id);
        this.#o.log(`done ${id} exit ${exitCode}${error ? ` (${error})` : ''}`);
        send(socket, { type: 'invocation.result', invocation_id: id, exit_code: exitCode, error, ...(outputTruncated ? { output_truncated: true } : {}) });
      },
    });
    this.#running.set(id, run);
  }

  #cancel(id: string): void {
    const run = this.#running.get(id);
    this.#running.delete(id);
    if (run) {
      this.#o.log(`cancel ${id}`);
      run.kill('cancelled');
    }
  }

  #onClose(socket: WebSocket, code: number, reason: Buffer, refusal: Refusal | null): void {
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#heartbeat = null;
    this.#killAll('disconnected');
    if (this.#stopping || this.#ws !== socket) return;
    if (refusal !== null) return this.#onRefused(refusal);
    this.#o.log(`disconnected (${code}${reason.length > 0 ? ` ${reason.toString()}` : ''})`);
    if (code === CLOSE.protocolError && this.#lastError === 'agent_name_in_use' && this.#enrolledOnce) this.#scheduleReconnect();
    else if (FINAL_CLOSES.has(code)) this.#o.fatal(`the gateway closed the connection for good (${code} ${reason.toString()})`);
    else this.#scheduleReconnect();
  }

  #onRefused({ status, message, retryAfterMs }: Refusal): void {
    if (status === 401 || status === 403) return this.#o.fatal(`the gateway refused the ${this.#agentKey ? 'agent' : 'join'} key (${status}): ${message}`);
    this.#o.log(`upgrade refused (${status}): ${message}`);
    // A 429 (the enrollment rate limit) says when a connection is admitted again: not before.
    this.#delay = Math.min(Math.max(this.#delay, retryAfterMs), 60_000);
    this.#scheduleReconnect();
  }
}
