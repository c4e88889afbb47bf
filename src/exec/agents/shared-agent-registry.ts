/**
 * The agent registry of a replica sharing PostgreSQL (issue 12): this replica's own agents (the local
 * registry, which holds their sockets) and the agents other replicas hold, as they published them
 * (ExecPresence). An invocation created here for a tool only an agent of replica A offers is stored
 * queued, and A is woken: A's service dispatches its queued invocations to its agent, records itself as
 * the owner, and every replica's readers hear of each change through the store's change notices.
 *
 * `dispatch` to another replica's agent therefore answers false (not sent from here) after waking that
 * replica; the service tries the next candidate, else leaves the invocation queued for A. Local agents
 * come first among the candidates, so an agent this replica holds is used at once.
 */
import type { AgentReports, DispatchMessage, OnlineAgent } from '../../core/exec/agent-registry.js';
import type { AgentChange, ExecAgentsStore, ExecPresence, PresentAgent } from '../../core/store/exec-agents-store.js';
import { CLOSE } from './protocol.js';
import { servesWorkspace } from './serves-workspace.js';
import type { LocalAgentRegistry } from './local-agent-registry.js';

export interface SharedAgentRegistry extends LocalAgentRegistry {
  /** Reads the other replicas' agents again now (also done on every presence notice). */
  refresh(): Promise<void>;
  close(): void;
}

export interface SharedAgentRegistryOptions {
  readonly presence: ExecPresence;
  /** To read an agent changed through another replica (its workspaces). */
  readonly agents: ExecAgentsStore;
  readonly onError: (err: unknown, what: string) => void;
}

const viewOf = (a: PresentAgent): OnlineAgent => ({
  id: a.id,
  projectId: a.projectId,
  registrationName: a.registrationName,
  workspaceIds: a.workspaceIds,
  tools: new Map(a.tools.map((t) => [t.name, t])),
  running: 0,
});

/** What the registry's methods share. */
interface SharedState {
  readonly local: LocalAgentRegistry;
  readonly options: SharedAgentRegistryOptions;
  /** While this replica holds an agent: its subscriptions to changes made through other replicas. */
  readonly watching: Map<string, () => void>;
  /** The agents other replicas hold, as last read (`refresh`); never one this replica holds. */
  remote: Map<string, { agent: PresentAgent; view: OnlineAgent }>;
  readonly subscribers: AgentReports[];
  /** Woken replicas are remembered for the current dispatch pass only: one notice per replica per pass. */
  readonly woken: Set<string>;
}

export function createSharedAgentRegistry(local: LocalAgentRegistry, options: SharedAgentRegistryOptions): SharedAgentRegistry {
  const s: SharedState = { local, options, watching: new Map(), remote: new Map(), subscribers: [], woken: new Set() };
  const { presence, onError } = options;

  // Agents attaching and leaving here are published for the other replicas.
  local.subscribe({
    output: () => undefined,
    result: () => undefined,
    offline: ({ id: agentId }) => {
      unwatch(s, agentId);
      presence.detach(agentId).catch((err: unknown) => onError(err, 'unpublishing an agent that left'));
    },
    online: () => undefined,
  });
  const stopWake = retryWhenWoken(s);
  const stopChange = presence.onChange(() => refreshSoon(s));

  return {
    ...local,
    refresh: () => refresh(s),
    close() {
      stopWake();
      stopChange();
      for (const id of [...s.watching.keys()]) unwatch(s, id);
    },
    ...routingMethods(s),
    ...publishingMethods(s),
  };
}

async function refresh(s: SharedState): Promise<void> {
  const rows = await s.options.presence.elsewhere();
  s.remote = new Map(rows.filter((a) => !s.local.isOnline(a.id)).map((a) => [a.id, { agent: a, view: viewOf(a) }]));
}

function refreshSoon(s: SharedState): void {
  void refresh(s).catch((err: unknown) => s.options.onError(err, 'reading the agents of the other replicas'));
}

const remoteOf = (s: SharedState, projectId: string, workspaceId: string | null): OnlineAgent[] =>
  [...s.remote.values()].filter((r) => r.agent.projectId === projectId && servesWorkspace(r.agent, workspaceId)).map((r) => r.view);

function unwatch(s: SharedState, agentId: string): void {
  s.watching.get(agentId)?.();
  s.watching.delete(agentId);
}

/** Acts on this replica's agent when another replica deletes it, rotates its key or changes its workspaces. */
function watch(s: SharedState, agentId: string, projectId: string): void {
  const { local } = s;
  const { presence } = s.options;
  unwatch(s, agentId);
  const on = (what: AgentChange, fn: () => void) => presence.onChanged(agentId, what, fn);
  const stops = [
    on('deleted', () => local.disconnect(agentId, 'deleted', CLOSE.deleted, 'agent deleted')),
    on('rotated', () => local.disconnect(agentId, 'disconnected', CLOSE.keyRevoked, 'agent key rotated: reconnect with the new key')),
    on('updated', () => applyUpdate(s, agentId, projectId)),
  ];
  s.watching.set(agentId, () => stops.forEach((stop) => stop()));
}

/** Another replica changed this replica's agent: its workspaces are read again, applied and published. */
function applyUpdate(s: SharedState, agentId: string, projectId: string): void {
  const { local } = s;
  const { presence, agents, onError } = s.options;
  agents.findAgent(projectId, agentId).then(
    (a) => {
      if (a && local.isOnline(agentId)) local.setWorkspaces(agentId, a.workspaceIds);
      if (a && local.isOnline(agentId)) presence.setWorkspaces(agentId, a.workspaceIds).catch((err: unknown) => onError(err, "publishing an agent's workspaces"));
    },
    (err: unknown) => onError(err, 'reading an agent changed through another replica'),
  );
}

/**
 * Woken by a replica whose invocation waits for an agent of ours: the service retries its queued ones.
 * Wakes within 100 ms of a retry are coalesced into one more retry at the end of the window, not
 * dropped: a dropped wake left its invocation queued until the next periodic retry (a second).
 * Returns the unsubscribe.
 */
function retryWhenWoken(s: SharedState): () => void {
  const { presence, onError } = s.options;
  let waking = false;
  let wokenAgain = false;
  const retryForOthers = (): void => {
    waking = true;
    wokenAgain = false;
    setTimeout(() => {
      waking = false;
      if (wokenAgain) retryForOthers();
    }, 100).unref();
    for (const r of s.subscribers) void Promise.resolve(r.online('')).catch((err: unknown) => onError(err, 'dispatching for another replica'));
  };
  return presence.onWake(() => {
    if (waking) wokenAgain = true;
    else retryForOthers();
  });
}

/** Which agents may run a tool, local ones first, and sending work: to a local agent, else waking its replica. */
function routingMethods(s: SharedState): Pick<SharedAgentRegistry, 'candidates' | 'online' | 'dispatch' | 'isOnline' | 'lastSeen'> {
  const { local } = s;
  const { presence, onError } = s.options;
  return {
    candidates(projectId, workspaceId, toolName) {
      return [...local.candidates(projectId, workspaceId, toolName), ...remoteOf(s, projectId, workspaceId).filter((a) => a.tools.has(toolName))];
    },
    online(projectId, workspaceId) {
      return [...local.online(projectId, workspaceId), ...remoteOf(s, projectId, workspaceId)];
    },
    dispatch(agentId, message: DispatchMessage) {
      if (local.isOnline(agentId)) return local.dispatch(agentId, message);
      const r = s.remote.get(agentId);
      if (r && !s.woken.has(r.agent.instanceId)) {
        s.woken.add(r.agent.instanceId);
        queueMicrotask(() => s.woken.delete(r.agent.instanceId));
        presence.wake(r.agent.instanceId).catch((err: unknown) => onError(err, 'waking the replica holding an agent'));
      }
      return false;
    },
    isOnline: (agentId) => local.isOnline(agentId) || s.remote.has(agentId),
    lastSeen: (agentId) => local.lastSeen(agentId) ?? s.remote.get(agentId)?.agent.since ?? null,
  };
}

/** Subscribing, and the changes this replica publishes for the others: agents attaching, disconnected, re-scoped. */
function publishingMethods(s: SharedState): Pick<SharedAgentRegistry, 'subscribe' | 'attach' | 'disconnect' | 'setWorkspaces'> {
  const { local } = s;
  const { presence, onError } = s.options;
  return {
    subscribe(reports) {
      s.subscribers.push(reports);
      local.subscribe(reports);
    },
    attach(agent, link) {
      s.remote.delete(agent.id);
      // Published before the subscribers hear of it: another replica woken at once finds it.
      presence
        .attach({ id: agent.id, projectId: agent.projectId, registrationName: agent.registrationName, workspaceIds: agent.workspaceIds, tools: [...agent.tools.values()], since: Date.now() })
        .catch((err: unknown) => onError(err, 'publishing an agent that came online'));
      watch(s, agent.id, agent.projectId);
      local.attach(agent, link);
    },
    disconnect(agentId, reason, closeCode, closeReason) {
      if (local.isOnline(agentId)) return local.disconnect(agentId, reason, closeCode, closeReason);
      // Held by another replica: that one closes the socket.
      if (s.remote.has(agentId)) {
        const what: AgentChange = reason === 'deleted' ? 'deleted' : 'rotated';
        presence.changed(agentId, what).catch((err: unknown) => onError(err, 'telling the replica holding an agent to close it'));
      }
    },
    setWorkspaces(agentId, workspaceIds) {
      local.setWorkspaces(agentId, workspaceIds);
      if (local.isOnline(agentId)) presence.setWorkspaces(agentId, workspaceIds).catch((err: unknown) => onError(err, "publishing an agent's workspaces"));
      else if (s.remote.has(agentId)) presence.changed(agentId, 'updated').catch((err: unknown) => onError(err, 'telling the replica holding an agent of its workspaces'));
    },
  };
}
