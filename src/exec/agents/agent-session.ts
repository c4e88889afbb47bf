/**
 * One agent connection (docs/exec.md "Agent protocol"), as a WsSession of src/http/ws.ts: the first
 * message must be `enroll`; once enrolled, `enrolled` is sent BEFORE the agent joins the registry (which
 * tells the invocations' side, which may dispatch at once: the agent must have its id first). Every
 * message afterwards refreshes the lease; a runtime message that cannot be read is answered with an
 * `invalid_body` error and dropped, without closing: the agent's running invocations are worth more than
 * one bad frame.
 *
 * A graceful stop (docs/exec.md "Graceful stop"): `drainFirst` keeps an enrolled agent's socket open
 * while it finishes what it runs; one still open at the drain deadline is shut down, and what it still
 * runs fails with the offline reason `gateway_stopping` rather than `disconnected`.
 */
import type { ExecTool } from '../../core/exec/agent-registry.js';
import type { WsSession, WsSocket } from '../../http/ws.js';
import type { Credential, EnrollOutcome } from './enrollment.js';
import type { AgentLink, ConnectedAgent, LocalAgentRegistry } from './local-agent-registry.js';
import { CLOSE, decodeFrame, gatewayMessages, parseRuntimeMessage } from './protocol.js';
import type { AgentRecord } from './records.js';

export interface AgentSessionContext {
  readonly projectId: string;
  readonly credential: Credential;
  readonly enroll: (projectId: string, credential: Credential, raw: unknown) => Promise<EnrollOutcome>;
  readonly registry: LocalAgentRegistry;
  readonly leaseMs: number;
  readonly now: () => number;
  readonly log: (level: 'info' | 'warn', fields: Record<string, unknown>, message: string) => void;
  /** The session ended (enrolled or not): the caller stops tracking it. */
  readonly onClosed: (session: AgentSession) => void;
}

export function connectedAgent(a: AgentRecord): ConnectedAgent {
  return {
    id: a.id,
    projectId: a.projectId,
    registrationName: a.registrationName,
    workspaceIds: a.workspaceIds,
    tools: new Map<string, ExecTool>(a.manifest.tools.map((t) => [t.name, t])),
  };
}

export class AgentSession implements WsSession {
  readonly #ctx: AgentSessionContext;
  readonly #socket: WsSocket;
  readonly #link: AgentLink;
  readonly #openedAt: number;
  #agentId: string | null = null;
  /** Messages that came while the enrollment was being written: handled, in order, once it is. */
  #held: unknown[] | null = null;
  /** The server is ending this socket (graceful stop): the agent did not leave on its own. */
  #stopping = false;

  constructor(socket: WsSocket, ctx: AgentSessionContext) {
    this.#ctx = ctx;
    this.#socket = socket;
    this.#link = { send: (text) => socket.send(text), close: (code, reason) => socket.end(code, reason) };
    this.#openedAt = ctx.now();
  }

  get agentId(): string | null {
    return this.#agentId;
  }

  message(data: Buffer, isBinary: boolean): void {
    // Decoded now: uWS reuses the buffer once this callback returns.
    const raw = decodeFrame(data, isBinary);
    if (this.#held) return void this.#held.push(raw);
    this.#handle(raw);
  }

  #handle(raw: unknown): void {
    const agentId = this.#agentId;
    if (agentId === null) return this.#enroll(raw);
    const { registry } = this.#ctx;
    registry.touch(agentId, this.#link);
    const m = raw === undefined ? { kind: 'invalid' as const, message: 'messages are JSON text frames' } : parseRuntimeMessage(raw);
    switch (m.kind) {
      case 'heartbeat':
        return;
      case 'output':
        return registry.output(agentId, this.#link, m.invocationId, m.data);
      case 'result':
        return registry.result(agentId, this.#link, m.invocationId, { exitCode: m.exitCode, output: m.output, error: m.error, outputTruncated: m.outputTruncated });
      case 'enroll':
        this.#socket.send(gatewayMessages.error('invalid_body', 'Already enrolled: reconnect to enroll with another manifest.'));
        return;
      case 'invalid':
        this.#socket.send(gatewayMessages.error('invalid_body', `Unreadable message: ${m.message}.`));
    }
  }

  #enroll(raw: unknown): void {
    if (!this.#socket.open) return;
    const ctx = this.#ctx;
    const type = raw !== null && typeof raw === 'object' ? (raw as { type?: unknown }).type : undefined;
    if (type !== 'enroll') {
      return this.#enrolled({ ok: false, code: 'exec_manifest_invalid', message: 'The first message must be a JSON text frame {"type": "enroll", ...}.', closeCode: CLOSE.protocolError });
    }
    this.#held = [];
    ctx.enroll(ctx.projectId, ctx.credential, raw).then(
      (outcome) => this.#enrolled(outcome),
      (err: unknown) => {
        ctx.log('warn', { project: ctx.projectId, err }, 'exec agent enrollment failed');
        this.#socket.end(CLOSE.protocolError, 'enrollment failed; reconnect');
      },
    ).finally(() => {
      const held = this.#held ?? [];
      this.#held = null;
      for (const m of held) if (this.#socket.open) this.#handle(m);
    });
  }

  #enrolled(outcome: EnrollOutcome): void {
    const ctx = this.#ctx;
    // Closed while the enrollment was written: the row stands (a reconnect re-enrolls), the session does not.
    if (!this.#socket.open) return;
    if (!outcome.ok) {
      ctx.log('warn', { project: ctx.projectId, code: outcome.code }, `exec agent refused: ${outcome.message}`);
      this.#socket.send(gatewayMessages.error(outcome.code, outcome.message));
      this.#socket.end(outcome.closeCode, outcome.code);
      return;
    }
    const { agent, agentKey } = outcome;
    this.#agentId = agent.id;
    this.#socket.send(gatewayMessages.enrolled(agent.id, agentKey, ctx.leaseMs));
    ctx.registry.attach(connectedAgent(agent), this.#link);
    ctx.log('info', { project: ctx.projectId, agent_id: agent.id, registration_name: agent.registrationName, tools: agent.manifest.tools.length }, 'exec agent enrolled');
  }

  /** Called by the lease timer: a connection that has not enrolled within the lease is closed. */
  expireIfNotEnrolled(now: number): void {
    if (this.#agentId === null && now - this.#openedAt >= this.#ctx.leaseMs) {
      this.#socket.end(CLOSE.leaseExpired, `no enroll message within ${this.#ctx.leaseMs} ms`);
    }
  }

  /** An enrolled agent finishes its running invocations before its socket is closed; others close now. */
  drainFirst(): Promise<void> | null {
    return this.#agentId === null ? null : this.#ctx.registry.drain(this.#agentId, this.#link);
  }

  shutdown(): void {
    this.#stopping = true;
  }

  closed(code: number, reason: string): void {
    const agentId = this.#agentId;
    if (agentId !== null) {
      this.#ctx.registry.detach(agentId, this.#link, this.#stopping ? 'gateway_stopping' : 'disconnected');
      this.#ctx.log('info', { project: this.#ctx.projectId, agent_id: agentId, code, reason }, 'exec agent disconnected');
    }
    this.#ctx.onClosed(this);
  }
}
