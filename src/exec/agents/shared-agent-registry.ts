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

const serves = (a: { workspaceIds: readonly string[] }, workspaceId: string | null): boolean =>
  workspaceId === null || a.workspaceIds.length === 0 || a.workspaceIds.includes(workspaceId);

const viewOf = (a: PresentAgent): OnlineAgent => ({
  id: a.id,
  projectId: a.projectId,
  registrationName: a.registrationName,
  workspaceIds: a.workspaceIds,
  tools: new Map(a.tools.map((t) => [t.name, t])),
  running: 0,
});

export function createSharedAgentRegistry(local: LocalAgentRegistry, options: SharedAgentRegistryOptions): SharedAgentRegistry {
  const { presence, agents, onError } = options;
  /** While this replica holds an agent: its subscriptions to changes made through other replicas. */
  const watching = new Map<string, () => void>();
  const unwatch = (agentId: string): void => {
    watching.get(agentId)?.();
    watching.delete(agentId);
  };
  const watch = (agentId: string, projectId: string): void => {
    unwatch(agentId);
    const on = (what: AgentChange, fn: () => void) => presence.onChanged(agentId, what, fn);
    const stops = [
      on('deleted', () => local.disconnect(agentId, 'deleted', CLOSE.deleted, 'agent deleted')),
      on('rotated', () => local.disconnect(agentId, 'disconnected', CLOSE.keyRevoked, 'agent key rotated: reconnect with the new key')),
      on('updated', () => {
        agents.findAgent(projectId, agentId).then(
          (a) => {
            if (a && local.isOnline(agentId)) local.setWorkspaces(agentId, a.workspaceIds);
            if (a && local.isOnline(agentId)) presence.setWorkspaces(agentId, a.workspaceIds).catch((err: unknown) => onError(err, "publishing an agent's workspaces"));
          },
          (err: unknown) => onError(err, 'reading an agent changed through another replica'),
        );
      }),
    ];
    watching.set(agentId, () => stops.forEach((stop) => stop()));
  };
  let remote = new Map<string, { agent: PresentAgent; view: OnlineAgent }>();
  const subscribers: AgentReports[] = [];

  const refresh = async (): Promise<void> => {
    const rows = await presence.elsewhere();
    remote = new Map(rows.filter((a) => !local.isOnline(a.id)).map((a) => [a.id, { agent: a, view: viewOf(a) }]));
  };
  const refreshSoon = (): void => void refresh().catch((err: unknown) => onError(err, 'reading the agents of the other replicas'));
  const remoteOf = (projectId: string, workspaceId: string | null): OnlineAgent[] =>
    [...remote.values()].filter((r) => r.agent.projectId === projectId && serves(r.agent, workspaceId)).map((r) => r.view);

  // Agents attaching and leaving here are published for the other replicas.
  local.subscribe({
    output: () => undefined,
    result: () => undefined,
    offline: (agentId) => {
      unwatch(agentId);
      presence.detach(agentId).catch((err: unknown) => onError(err, 'unpublishing an agent that left'));
    },
    online: () => undefined,
  });

  // Woken by a replica whose invocation waits for an agent of ours: the service retries its queued ones.
  // Wakes within 100 ms of a retry are coalesced into one more retry at the end of the window, not
  // dropped: a dropped wake left its invocation queued until the next periodic retry (a second).
  let waking = false;
  let wokenAgain = false;
  const retryForOthers = (): void => {
    waking = true;
    wokenAgain = false;
    setTimeout(() => {
      waking = false;
      if (wokenAgain) retryForOthers();
    }, 100).unref();
    for (const r of subscribers) void Promise.resolve(r.online('')).catch((err: unknown) => onError(err, 'dispatching for another replica'));
  };
  const stopWake = presence.onWake(() => {
    if (waking) wokenAgain = true;
    else retryForOthers();
  });
  const stopChange = presence.onChange(refreshSoon);
  // Woken replicas are remembered for the current dispatch pass only: one notice per replica per pass.
  const woken = new Set<string>();

  return {
    ...local,
    refresh,
    close() {
      stopWake();
      stopChange();
      for (const id of [...watching.keys()]) unwatch(id);
    },
    candidates(projectId, workspaceId, toolName) {
      return [...local.candidates(projectId, workspaceId, toolName), ...remoteOf(projectId, workspaceId).filter((a) => a.tools.has(toolName))];
    },
    online(projectId, workspaceId) {
      return [...local.online(projectId, workspaceId), ...remoteOf(projectId, workspaceId)];
    },
    dispatch(agentId, message: DispatchMessage) {
      if (local.isOnline(agentId)) return local.dispatch(agentId, message);
      const r = remote.get(agentId);
      if (r && !woken.has(r.agent.instanceId)) {
        woken.add(r.agent.instanceId);
        queueMicrotask(() => woken.delete(r.agent.instanceId));
        presence.wake(r.agent.instanceId).catch((err: unknown) => onError(err, 'waking the replica holding an agent'));
      }
      return false;
    },
    subscribe(reports) {
      subscribers.push(reports);
      local.subscribe(reports);
    },
    attach(agent, link) {
      remote.delete(agent.id);
      // Published before the subscribers hear of it: another replica woken at once finds it.
      presence
        .attach({ id: agent.id, projectId: agent.projectId, registrationName: agent.registrationName, workspaceIds: agent.workspaceIds, tools: [...agent.tools.values()], since: Date.now() })
        .catch((err: unknown) => onError(err, 'publishing an agent that came online'));
      watch(agent.id, agent.projectId);
      local.attach(agent, link);
    },
    disconnect(agentId, reason, closeCode, closeReason) {
      if (local.isOnline(agentId)) return local.disconnect(agentId, reason, closeCode, closeReason);
      // Held by another replica: that one closes the socket.
      if (remote.has(agentId)) {
        const what: AgentChange = reason === 'deleted' ? 'deleted' : 'rotated';
        presence.changed(agentId, what).catch((err: unknown) => onError(err, 'telling the replica holding an agent to close it'));
      }
    },
    isOnline: (agentId) => local.isOnline(agentId) || remote.has(agentId),
    lastSeen: (agentId) => local.lastSeen(agentId) ?? remote.get(agentId)?.agent.since ?? null,
    setWorkspaces(agentId, workspaceIds) {
      local.setWorkspaces(agentId, workspaceIds);
      if (local.isOnline(agentId)) presence.setWorkspaces(agentId, workspaceIds).catch((err: unknown) => onError(err, "publishing an agent's workspaces"));
      else if (remote.has(agentId)) presence.changed(agentId, 'updated').catch((err: unknown) => onError(err, 'telling the replica holding an agent of its workspaces'));
    },
  };
}
