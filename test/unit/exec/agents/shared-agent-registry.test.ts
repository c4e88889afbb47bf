/**
 * The registry of a replica sharing PostgreSQL (src/exec/agents/shared-agent-registry.ts) over an
 * in-memory ExecPresence: this replica's agents come first, the other replicas' agents are candidates too,
 * a dispatch to one of those wakes its replica instead of sending, and changes made here to an agent held
 * elsewhere are passed on to its replica.
 */
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { AgentReports, ExecTool } from '../../../../src/core/exec/agent-registry.js';
import type { AgentChange, ExecAgentsStore, ExecPresence, PresentAgent } from '../../../../src/core/store/exec-agents-store.js';
import { createLocalAgentRegistry, type AgentLink } from '../../../../src/exec/agents/local-agent-registry.js';
import { createSharedAgentRegistry, type SharedAgentRegistry } from '../../../../src/exec/agents/shared-agent-registry.js';

const tool = (name: string): ExecTool => ({ name, description: '', input_schema: { type: 'object' }, risk: 'read', mcp_visible: false });
const link = (): AgentLink & { sent: string[] } => {
  const sent: string[] = [];
  return { sent, send: (t) => (sent.push(t), true), close: () => undefined };
};

class MemoryPresence implements ExecPresence {
  rows: PresentAgent[] = [];
  readonly woken: string[] = [];
  readonly changes: [string, AgentChange][] = [];
  readonly published: string[] = [];
  wakeListener: (() => void) | null = null;
  async attach(a: Omit<PresentAgent, 'instanceId'>) {
    this.published.push(a.id);
  }
  async detach(agentId: string) {
    this.published.splice(this.published.indexOf(agentId), 1);
  }
  async setWorkspaces() {}
  async elsewhere() {
    return this.rows;
  }
  onChange() {
    return () => undefined;
  }
  async wake(instanceId: string) {
    this.woken.push(instanceId);
  }
  onWake(fn: () => void) {
    this.wakeListener = fn;
    return () => undefined;
  }
  async changed(agentId: string, what: AgentChange) {
    this.changes.push([agentId, what]);
  }
  onChanged() {
    return () => undefined;
  }
}

let presence: MemoryPresence;
let registry: SharedAgentRegistry;

beforeEach(async () => {
  presence = new MemoryPresence();
  const local = createLocalAgentRegistry({ now: () => 0, leaseMs: 30_000, onReportError: (err) => { throw err; } });
  registry = createSharedAgentRegistry(local, { presence, agents: {} as ExecAgentsStore, onError: (err) => { throw err; } });
  presence.rows = [{ id: 'agt_far', projectId: 'proj_a', registrationName: 'far', workspaceIds: [], tools: [tool('echo'), tool('far_only')], instanceId: 'inst_other', since: 5 }];
  await registry.refresh();
});

describe('the agents of every replica', () => {
  it('offers another replica\'s agent as a candidate, after this replica\'s own', () => {
    registry.attach({ id: 'agt_near', projectId: 'proj_a', registrationName: 'near', workspaceIds: [], tools: new Map([['echo', tool('echo')]]) }, link());
    expect(registry.candidates('proj_a', 'ws_1', 'echo').map((a) => a.id)).toEqual(['agt_near', 'agt_far']);
    expect(registry.candidates('proj_a', 'ws_1', 'far_only').map((a) => a.id)).toEqual(['agt_far']);
    expect(registry.isOnline('agt_far')).toBe(true);
    expect(presence.published).toEqual(['agt_near']);
  });

  it('wakes the replica holding the agent instead of sending, once per dispatch pass', async () => {
    const message = { invocationId: 'inv_1', toolName: 'far_only', arguments: {}, timeoutMs: 1000 };
    expect(registry.dispatch('agt_far', message)).toBe(false);
    expect(registry.dispatch('agt_far', message)).toBe(false);
    await Promise.resolve();
    expect(presence.woken).toEqual(['inst_other']);
  });

  it('passes a delete and a rotation of another replica\'s agent on to that replica', () => {
    registry.disconnect('agt_far', 'deleted', 4403, 'agent deleted');
    registry.disconnect('agt_far', 'disconnected', 4401, 'rotated');
    registry.setWorkspaces('agt_far', ['ws_2']);
    expect(presence.changes).toEqual([['agt_far', 'deleted'], ['agt_far', 'rotated'], ['agt_far', 'updated']]);
  });

  it('tells the invocations\' side to retry its queued invocations when another replica wakes it', () => {
    const online: string[] = [];
    const reports: AgentReports = { output: () => undefined, result: () => undefined, offline: () => undefined, online: (id) => void online.push(id) };
    registry.subscribe(reports);
    presence.wakeListener?.();
    expect(online).toHaveLength(1);
  });

  it('retries once more after the 100 ms window for wakes that came during it, instead of dropping them', async () => {
    vi.useFakeTimers();
    try {
      const online: string[] = [];
      registry.subscribe({ output: () => undefined, result: () => undefined, offline: () => undefined, online: (id) => void online.push(id) });
      presence.wakeListener?.();
      presence.wakeListener?.();
      presence.wakeListener?.();
      expect(online).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(100);
      expect(online).toHaveLength(2);
      await vi.advanceTimersByTimeAsync(100);
      expect(online).toHaveLength(2);
    } finally {
      vi.useRealTimers();
    }
  });
});
