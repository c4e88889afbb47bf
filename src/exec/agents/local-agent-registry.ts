/**
 * The AgentRegistry of src/core/exec/agent-registry.ts, in memory: an agent is online while it holds a
 * connection to this process and its lease runs (docs/exec.md "Leases"). Each connection is a `link`;
 * a late callback of a replaced or closed link (its socket's close arriving after a lease expiry, say)
 * finds another link or none and changes nothing.
 *
 * Reports to the invocations' side only name invocations this agent was dispatched and has not finished:
 * an agent cannot report on another agent's invocations, nor after a cancel. A subscriber that throws is
 * reported to `onReportError`, never into the agent's socket handling.
 *
 * A graceful stop drains each agent (docs/exec.md "Graceful stop"): it is told `draining`, offered no
 * more work (neither a candidate nor listed online), and keeps reporting on what it runs; the caller
 * closes its socket once that is done (or at the drain deadline).
 */
import type { AgentOfflineReason, AgentRegistry, AgentReports, DispatchMessage, ExecTool, OnlineAgent } from '../../core/exec/agent-registry.js';
import { CLOSE, gatewayMessages } from './protocol.js';
import { servesWorkspace } from './serves-workspace.js';

export interface AgentLink {
  /** false when the socket is closed (or was just closed for not reading). */
  send(text: string): boolean;
  close(code: number, reason: string): void;
}

export interface ConnectedAgent {
  readonly id: string;
  readonly projectId: string;
  readonly registrationName: string;
  readonly workspaceIds: readonly string[];
  readonly tools: ReadonlyMap<string, ExecTool>;
}

export interface LocalAgentRegistryOptions {
  readonly now: () => number;
  readonly leaseMs: number;
  readonly onReportError: (err: unknown) => void;
  /** The agent went offline; `lastSeen` is its last message (persisted by the caller). */
  readonly onOffline?: (agentId: string, lastSeen: number) => void;
}

export interface AgentResult {
  readonly exitCode: number;
  readonly output: string | null;
  readonly error: string | null;
  /** The agent says it dropped output (a cap of its own); absent: it did not say. */
  readonly outputTruncated?: boolean;
}

export interface LocalAgentRegistry extends AgentRegistry {
  /** The agent enrolled on `link`; tells the subscribers it is online. */
  attach(agent: ConnectedAgent, link: AgentLink): void;
  isOnline(agentId: string): boolean;
  /** The last message of an online agent, else null. */
  lastSeen(agentId: string): number | null;
  /** Any message refreshes the lease. */
  touch(agentId: string, link: AgentLink): void;
  setWorkspaces(agentId: string, workspaceIds: readonly string[]): void;
  output(agentId: string, link: AgentLink, invocationId: string, data: string): void;
  result(agentId: string, link: AgentLink, invocationId: string, result: AgentResult): void;
  /**
   * A graceful stop: the agent is sent `draining` and takes no new work. Resolves once it runs nothing
   * (at once when idle), or when it goes offline.
   */
  drain(agentId: string, link: AgentLink): Promise<void>;
  /** The link's socket closed (`reason` default: disconnected). */
  detach(agentId: string, link: AgentLink, reason?: AgentOfflineReason): void;
  /** Takes the agent offline now and closes its socket (deleted, key rotated). */
  disconnect(agentId: string, reason: AgentOfflineReason, closeCode: number, closeReason: string): void;
  /** Agents silent for `leaseMs` go offline, their sockets closed with 4408; returns their ids. */
  expireLeases(): string[];
}

interface Entry {
  agent: ConnectedAgent;
  readonly link: AgentLink;
  readonly running: Set<string>;
  lastSeen: number;
  /** Set by `drain`: settles when `running` empties or the agent goes offline. */
  draining: { readonly done: Promise<void>; readonly settle: () => void } | null;
}

/** What the registry's methods share: its options, the online agents by id and the subscribers. */
interface LocalState {
  readonly options: LocalAgentRegistryOptions;
  readonly entries: Map<string, Entry>;
  readonly subscribers: AgentReports[];
}

export function createLocalAgentRegistry(options: LocalAgentRegistryOptions): LocalAgentRegistry {
  const state: LocalState = { options, entries: new Map(), subscribers: [] };
  return { ...workMethods(state), ...connectionMethods(state) };
}

/** Each subscriber is told; one that throws or rejects goes to `onReportError`, never to the caller. */
function report(s: LocalState, f: (r: AgentReports) => void | Promise<void>): void {
  for (const subscriber of s.subscribers) {
    try {
      // A subscriber may apply the report asynchronously (a network store): its rejection is logged too.
      void Promise.resolve(f(subscriber)).catch(s.options.onReportError);
    } catch (err) {
      s.options.onReportError(err);
    }
  }
}

/** The agent's entry while `link` is still its connection, else null (a replaced or closed link). */
function current(s: LocalState, agentId: string, link: AgentLink): Entry | null {
  const e = s.entries.get(agentId);
  return e && e.link === link ? e : null;
}

const view = (e: Entry): OnlineAgent => ({ ...e.agent, running: e.running.size });

/** Agents that may be given work: a draining one finishes what it has and takes nothing new. */
const available = (s: LocalState): Entry[] => [...s.entries.values()].filter((e) => e.draining === null);

function settleDrain(s: LocalState, e: Entry): void {
  if (e.running.size === 0 || s.entries.get(e.agent.id) !== e) e.draining?.settle();
}

const leastBusy = (a: Entry, b: Entry): number => a.running.size - b.running.size || (a.agent.id < b.agent.id ? -1 : 1);

function goOffline(s: LocalState, e: Entry, reason: AgentOfflineReason): void {
  s.entries.delete(e.agent.id);
  const running = [...e.running];
  e.running.clear();
  s.options.onOffline?.(e.agent.id, e.lastSeen);
  report(s, (r) => r.offline({ id: e.agent.id, projectId: e.agent.projectId }, reason, running));
  settleDrain(s, e);
}

/** The AgentRegistry side: which agents may run a tool, and sending them work or a cancel. */
function workMethods(s: LocalState): AgentRegistry {
  return {
    candidates(projectId, workspaceId, toolName) {
      return available(s)
        .filter((e) => e.agent.projectId === projectId && servesWorkspace(e.agent, workspaceId) && e.agent.tools.has(toolName))
        .sort(leastBusy)
        .map(view);
    },
    online(projectId, workspaceId) {
      return available(s).filter((e) => e.agent.projectId === projectId && servesWorkspace(e.agent, workspaceId)).sort(leastBusy).map(view);
    },
    dispatch(agentId, message: DispatchMessage) {
      const e = s.entries.get(agentId);
      if (!e || e.draining !== null) return false;
      if (!e.link.send(gatewayMessages.dispatch(message))) return false;
      // The send may have closed the socket (a client not reading): then it is no longer this agent's.
      if (s.entries.get(agentId) !== e) return false;
      e.running.add(message.invocationId);
      return true;
    },
    cancel(agentId, invocationId) {
      const e = s.entries.get(agentId);
      if (!e?.running.delete(invocationId)) return;
      e.link.send(gatewayMessages.cancel(invocationId));
      settleDrain(s, e);
    },
    subscribe(reports) {
      s.subscribers.push(reports);
    },
  };
}

/** The connections' side: an agent's socket attaching, reporting, draining and going offline. */
function connectionMethods(s: LocalState): Omit<LocalAgentRegistry, keyof AgentRegistry> {
  const { now } = s.options;
  return {
    attach(agent, link) {
      s.entries.set(agent.id, { agent, link, running: new Set(), lastSeen: now(), draining: null });
      report(s, (r) => r.online(agent.id));
    },
    isOnline: (agentId) => s.entries.has(agentId),
    lastSeen: (agentId) => s.entries.get(agentId)?.lastSeen ?? null,
    touch(agentId, link) {
      const e = current(s, agentId, link);
      if (e) e.lastSeen = Math.max(e.lastSeen, now());
    },
    setWorkspaces(agentId, workspaceIds) {
      const e = s.entries.get(agentId);
      if (e) e.agent = { ...e.agent, workspaceIds };
    },
    output(agentId, link, invocationId, data) {
      const e = current(s, agentId, link);
      if (e?.running.has(invocationId)) report(s, (r) => r.output(agentId, invocationId, data));
    },
    result(agentId, link, invocationId, result) {
      const e = current(s, agentId, link);
      if (!e?.running.delete(invocationId)) return;
      report(s, (r) => r.result(agentId, invocationId, result));
      settleDrain(s, e);
    },
    drain: (agentId, link) => drain(s, agentId, link),
    detach(agentId, link, reason = 'disconnected') {
      const e = current(s, agentId, link);
      if (e) goOffline(s, e, reason);
    },
    disconnect(agentId, reason, closeCode, closeReason) {
      const e = s.entries.get(agentId);
      if (!e) return;
      goOffline(s, e, reason);
      e.link.close(closeCode, closeReason);
    },
    expireLeases: () => expireLeases(s),
  };
}

function drain(s: LocalState, agentId: string, link: AgentLink): Promise<void> {
  const e = current(s, agentId, link);
  if (!e) return Promise.resolve();
  if (e.draining) return e.draining.done;
  let settle = (): void => undefined;
  const done = new Promise<void>((resolve) => (settle = resolve));
  e.draining = { done, settle };
  e.link.send(gatewayMessages.draining());
  settleDrain(s, e);
  return done;
}

function expireLeases(s: LocalState): string[] {
  const { now, leaseMs } = s.options;
  const t = now();
  const expired = [...s.entries.values()].filter((e) => t - e.lastSeen >= leaseMs);
  for (const e of expired) {
    goOffline(s, e, 'lease_expired');
    e.link.close(CLOSE.leaseExpired, `lease expired: no message for ${leaseMs} ms`);
  }
  return expired.map((e) => e.agent.id);
}
