/**
 * Which worker holds which execution agent's socket, under `serve --workers N` on a SQLite store (issue
 * 32): the ExecPresence of core/store/exec-agents-store.ts over a BroadcastChannel of the launch, where
 * replicas on PostgreSQL use a table and change notices (store/postgres/exec-presence.ts). With it the
 * shared agent registry (exec/agents/shared-agent-registry.ts) works across workers as across replicas:
 * an invocation created on worker A for a tool only worker B's agent offers is stored queued and B is
 * woken; B claims it in the shared store, sends it to its agent and records the result, and A's readers
 * hear of it through the invocations' reconcile (every clock poll, 100 ms).
 *
 * Each worker keeps the agents the others announced. A worker that starts (or replaces a dead one) says
 * hello and the others announce their agents again; the agents of a worker that died are dropped once
 * the instance registry has reaped it (`reaped`), and never offered while it is not registered.
 */
import { BroadcastChannel } from 'node:worker_threads';
import type { AgentChange, ExecPresence, PresentAgent } from '../core/store/exec-agents-store.js';

export const presenceChannelName = (busChannel: string): string => `${busChannel}:exec-presence`;

type PresenceMessage =
  | { readonly kind: 'attach'; readonly agent: PresentAgent }
  | { readonly kind: 'detach'; readonly agentId: string; readonly instanceId: string }
  | { readonly kind: 'workspaces'; readonly agentId: string; readonly instanceId: string; readonly workspaceIds: readonly string[] }
  | { readonly kind: 'hello'; readonly instanceId: string }
  | { readonly kind: 'wake'; readonly to: string }
  | { readonly kind: 'changed'; readonly agentId: string; readonly what: AgentChange };

const KINDS = new Set(['attach', 'detach', 'workspaces', 'hello', 'wake', 'changed']);
const isMessage = (m: unknown): m is PresenceMessage => typeof m === 'object' && m !== null && KINDS.has((m as { kind?: string }).kind ?? '');

export interface BroadcastPresence extends ExecPresence {
  /** Instances the registry found dead: their agents are offline. */
  reaped(instanceIds: readonly string[]): void;
  close(): void;
}

/** Calls each listener, from a copy: a listener may unsubscribe itself. */
function notify(listeners: Iterable<() => void> | undefined): void {
  for (const fn of [...(listeners ?? [])]) fn();
}

function subscribe(set: Set<() => void>, fn: () => void): () => void {
  set.add(fn);
  return () => void set.delete(fn);
}

/** `isRegistered`: the store's instance registry (a worker that died is not, once reaped). */
export function createBroadcastPresence(channelName: string, instanceId: string, isRegistered: (id: string) => boolean): BroadcastPresence {
  const channel = new BroadcastChannel(channelName);
  channel.unref();
  const mine = new Map<string, PresentAgent>();
  const others = new Map<string, PresentAgent>();
  const changeListeners = new Set<() => void>();
  const wakeListeners = new Set<() => void>();
  const changedListeners = new Map<string, Set<() => void>>();
  let closed = false;
  const post = (message: PresenceMessage): void => {
    if (!closed) channel.postMessage(message);
  };
  const receive = (m: PresenceMessage): void => {
    switch (m.kind) {
      case 'attach':
        others.set(m.agent.id, m.agent);
        return notify(changeListeners);
      case 'detach':
      case 'workspaces': {
        const held = others.get(m.agentId);
        // Only the worker holding it now: an agent that reconnected elsewhere stays present there.
        if (held?.instanceId !== m.instanceId) return;
        if (m.kind === 'detach') others.delete(m.agentId);
        else others.set(m.agentId, { ...held, workspaceIds: m.workspaceIds });
        return notify(changeListeners);
      }
      case 'hello':
        for (const agent of mine.values()) post({ kind: 'attach', agent });
        return;
      case 'wake':
        if (m.to === instanceId) notify(wakeListeners);
        return;
      case 'changed':
        return notify(changedListeners.get(`${m.what}:${m.agentId}`));
    }
  };
  channel.onmessage = (event: unknown) => {
    const data = (event as { data?: unknown }).data;
    if (isMessage(data)) receive(data);
  };
  post({ kind: 'hello', instanceId });

  return {
    async attach(a) {
      const agent: PresentAgent = { ...a, instanceId };
      mine.set(a.id, agent);
      post({ kind: 'attach', agent });
    },
    async detach(agentId) {
      if (mine.delete(agentId)) post({ kind: 'detach', agentId, instanceId });
    },
    async setWorkspaces(agentId, workspaceIds) {
      const held = mine.get(agentId);
      if (held === undefined) return;
      mine.set(agentId, { ...held, workspaceIds });
      post({ kind: 'workspaces', agentId, instanceId, workspaceIds });
    },
    async elsewhere() {
      return [...others.values()].filter((a) => a.instanceId !== instanceId && isRegistered(a.instanceId)).sort((a, b) => a.since - b.since);
    },
    onChange: (fn) => subscribe(changeListeners, fn),
    async wake(target) {
      post({ kind: 'wake', to: target });
    },
    onWake: (fn) => subscribe(wakeListeners, fn),
    async changed(agentId, what) {
      post({ kind: 'changed', agentId, what });
    },
    onChanged(agentId, what, fn) {
      const key = `${what}:${agentId}`;
      let set = changedListeners.get(key);
      if (!set) changedListeners.set(key, (set = new Set()));
      const stop = subscribe(set, fn);
      return () => {
        stop();
        if (set.size === 0) changedListeners.delete(key);
      };
    },
    reaped(instanceIds) {
      const gone = new Set(instanceIds);
      let dropped = false;
      for (const [id, agent] of others) {
        if (gone.has(agent.instanceId)) dropped = others.delete(id) || dropped;
      }
      if (dropped) notify(changeListeners);
    },
    close() {
      if (closed) return;
      closed = true;
      channel.close();
    },
  };
}
