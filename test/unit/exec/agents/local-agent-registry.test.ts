/**
 * The in-memory AgentRegistry (src/exec/agents/local-agent-registry.ts) against the seam's contract
 * (src/core/exec/agent-registry.ts), with links that record what the agent would be sent and a clock the
 * test moves. Until the invocations' side is wired, this is where dispatch and results are exercised.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { AgentOfflineReason, AgentReports, ExecTool } from '../../../../src/core/exec/agent-registry.js';
import { createLocalAgentRegistry, type AgentLink, type ConnectedAgent, type LocalAgentRegistry } from '../../../../src/exec/agents/local-agent-registry.js';

const tool = (name: string): ExecTool => ({ name, description: '', input_schema: { type: 'object' }, risk: 'read', mcp_visible: false });

function agent(id: string, tools: string[], workspaceIds: string[] = [], projectId = 'proj_a'): ConnectedAgent {
  return { id, projectId, registrationName: `name-${id}`, workspaceIds, tools: new Map(tools.map((t) => [t, tool(t)])) };
}

interface TestLink extends AgentLink {
  readonly sent: Record<string, unknown>[];
  closedWith: { code: number; reason: string } | null;
  open: boolean;
}

function link(): TestLink {
  const l: TestLink = {
    sent: [],
    closedWith: null,
    open: true,
    send(text) {
      if (!l.open) return false;
      l.sent.push(JSON.parse(text) as Record<string, unknown>);
      return true;
    },
    close(code, reason) {
      l.open = false;
      l.closedWith = { code, reason };
    },
  };
  return l;
}

type Heard =
  | { kind: 'output'; agentId: string; invocationId: string; data: string }
  | { kind: 'result'; agentId: string; invocationId: string; exitCode: number; output: string | null; error: string | null }
  | { kind: 'offline'; agentId: string; reason: AgentOfflineReason; running: readonly string[] }
  | { kind: 'online'; agentId: string };

const dispatchOf = (invocationId: string, toolName = 'echo') => ({ invocationId, toolName, arguments: { text: 'hi' }, timeoutMs: 5000 });

let now = 1_000_000;
let heard: Heard[];
let errors: unknown[];
let offlineSeen: [string, number][];
let registry: LocalAgentRegistry;

beforeEach(() => {
  now = 1_000_000;
  heard = [];
  errors = [];
  offlineSeen = [];
  registry = createLocalAgentRegistry({ now: () => now, leaseMs: 30_000, onReportError: (e) => errors.push(e), onOffline: (id, at) => offlineSeen.push([id, at]) });
  const reports: AgentReports = {
    output: (agentId, invocationId, data) => void heard.push({ kind: 'output', agentId, invocationId, data }),
    result: (agentId, invocationId, r) => void heard.push({ kind: 'result', agentId, invocationId, ...r }),
    offline: (agent, reason, running) => void heard.push({ kind: 'offline', agentId: agent.id, reason, running }),
    online: (agentId) => void heard.push({ kind: 'online', agentId }),
  };
  registry.subscribe(reports);
});

describe('local agent registry', () => {
  it('tells the subscribers an attached agent is online and lists it for its project only', () => {
    registry.attach(agent('agt_1', ['echo']), link());
    expect(heard).toEqual([{ kind: 'online', agentId: 'agt_1' }]);
    expect(registry.online('proj_a', null).map((a) => a.id)).toEqual(['agt_1']);
    expect(registry.online('proj_b', null)).toEqual([]);
    expect(registry.isOnline('agt_1')).toBe(true);
  });

  it('offers as candidates only agents of the project serving the workspace with the tool, least busy first', () => {
    const l1 = link();
    registry.attach(agent('agt_1', ['echo', 'ls']), l1);
    registry.attach(agent('agt_2', ['echo'], ['ws_b']), link());
    registry.attach(agent('agt_3', ['ls'], ['ws_a']), link());
    registry.attach(agent('agt_4', ['echo'], [], 'proj_b'), link());
    expect(registry.candidates('proj_a', 'ws_b', 'echo').map((a) => a.id)).toEqual(['agt_1', 'agt_2']);
    expect(registry.candidates('proj_a', 'ws_a', 'echo').map((a) => a.id)).toEqual(['agt_1']);
    expect(registry.candidates('proj_a', 'ws_a', 'ls').map((a) => a.id)).toEqual(['agt_1', 'agt_3']);
    expect(registry.candidates('proj_a', 'ws_a', 'rm')).toEqual([]);

    expect(registry.dispatch('agt_1', dispatchOf('inv_1'))).toBe(true);
    const [first, second] = registry.candidates('proj_a', 'ws_b', 'echo');
    expect([first?.id, first?.running, second?.id, second?.running]).toEqual(['agt_2', 0, 'agt_1', 1]);
  });

  it('sends invocation.dispatch, counts it running, and forwards its output and result once', () => {
    const l = link();
    registry.attach(agent('agt_1', ['echo']), l);
    expect(registry.dispatch('agt_1', dispatchOf('inv_1'))).toBe(true);
    expect(l.sent).toEqual([{ type: 'invocation.dispatch', invocation_id: 'inv_1', tool_name: 'echo', arguments: { text: 'hi' }, timeout_ms: 5000 }]);
    expect(registry.online('proj_a', null)[0]?.running).toBe(1);

    registry.output('agt_1', l, 'inv_1', 'hi');
    registry.result('agt_1', l, 'inv_1', { exitCode: 0, output: null, error: null });
    registry.result('agt_1', l, 'inv_1', { exitCode: 1, output: null, error: 'again' });
    expect(heard.slice(1)).toEqual([
      { kind: 'output', agentId: 'agt_1', invocationId: 'inv_1', data: 'hi' },
      { kind: 'result', agentId: 'agt_1', invocationId: 'inv_1', exitCode: 0, output: null, error: null },
    ]);
    expect(registry.online('proj_a', null)[0]?.running).toBe(0);
  });

  it("ignores reports on invocations the agent was not dispatched: another agent's, or unknown", () => {
    const l1 = link();
    const l2 = link();
    registry.attach(agent('agt_1', ['echo']), l1);
    registry.attach(agent('agt_2', ['echo']), l2);
    registry.dispatch('agt_1', dispatchOf('inv_1'));
    registry.output('agt_2', l2, 'inv_1', 'spoofed');
    registry.result('agt_2', l2, 'inv_1', { exitCode: 0, output: null, error: null });
    registry.result('agt_1', l1, 'inv_9', { exitCode: 0, output: null, error: null });
    expect(heard.filter((h) => h.kind === 'output' || h.kind === 'result')).toEqual([]);
  });

  it('refuses to dispatch to an agent that is not online, or whose socket no longer takes messages', () => {
    expect(registry.dispatch('agt_missing', dispatchOf('inv_1'))).toBe(false);
    const l = link();
    registry.attach(agent('agt_1', ['echo']), l);
    l.open = false;
    expect(registry.dispatch('agt_1', dispatchOf('inv_2'))).toBe(false);
    expect(registry.online('proj_a', null)[0]?.running).toBe(0);
  });

  it('cancel sends invocation.cancel, stops counting it, and a late result is not forwarded', () => {
    const l = link();
    registry.attach(agent('agt_1', ['echo']), l);
    registry.dispatch('agt_1', dispatchOf('inv_1'));
    registry.cancel('agt_1', 'inv_1');
    expect(l.sent[1]).toEqual({ type: 'invocation.cancel', invocation_id: 'inv_1' });
    expect(registry.online('proj_a', null)[0]?.running).toBe(0);
    registry.result('agt_1', l, 'inv_1', { exitCode: 143, output: null, error: 'killed' });
    registry.cancel('agt_1', 'inv_1');
    expect(l.sent).toHaveLength(2);
    expect(heard.filter((h) => h.kind === 'result')).toEqual([]);
  });

  it('a closed socket takes the agent offline (disconnected) with the invocations it was running', () => {
    const l = link();
    registry.attach(agent('agt_1', ['echo']), l);
    registry.dispatch('agt_1', dispatchOf('inv_1'));
    registry.dispatch('agt_1', dispatchOf('inv_2'));
    registry.result('agt_1', l, 'inv_1', { exitCode: 0, output: null, error: null });
    now += 500;
    registry.detach('agt_1', l);
    expect(heard.at(-1)).toEqual({ kind: 'offline', agentId: 'agt_1', reason: 'disconnected', running: ['inv_2'] });
    expect(registry.isOnline('agt_1')).toBe(false);
    expect(registry.candidates('proj_a', 'ws_a', 'echo')).toEqual([]);
    expect(offlineSeen).toEqual([['agt_1', 1_000_000]]);
  });

  it('expires leases on its clock: only agents silent for lease_ms, closed 4408, reported lease_expired; any message refreshes the lease', () => {
    const quiet = link();
    const busy = link();
    registry.attach(agent('agt_quiet', ['echo']), quiet);
    registry.attach(agent('agt_busy', ['echo']), busy);
    registry.dispatch('agt_quiet', dispatchOf('inv_1'));
    now += 20_000;
    registry.touch('agt_busy', busy);
    now += 9_999;
    expect(registry.expireLeases()).toEqual([]);
    now += 1;
    expect(registry.expireLeases()).toEqual(['agt_quiet']);
    expect(quiet.closedWith?.code).toBe(4408);
    expect(busy.closedWith).toBeNull();
    expect(heard.at(-1)).toEqual({ kind: 'offline', agentId: 'agt_quiet', reason: 'lease_expired', running: ['inv_1'] });
    // The expired socket's own close arrives later and changes nothing.
    registry.detach('agt_quiet', quiet);
    expect(heard.filter((h) => h.kind === 'offline')).toHaveLength(1);
    now += 20_000;
    expect(registry.expireLeases()).toEqual(['agt_busy']);
  });

  it('a late callback of a replaced link changes nothing for the new connection', () => {
    const old = link();
    const fresh = link();
    registry.attach(agent('agt_1', ['echo']), old);
    registry.disconnect('agt_1', 'disconnected', 4401, 'rotated');
    registry.attach(agent('agt_1', ['echo']), fresh);
    registry.dispatch('agt_1', dispatchOf('inv_1'));
    registry.output('agt_1', old, 'inv_1', 'from the old socket');
    registry.detach('agt_1', old);
    expect(registry.isOnline('agt_1')).toBe(true);
    expect(heard.filter((h) => h.kind === 'output')).toEqual([]);
  });

  it('disconnect closes the socket with the given code and reports the reason (deleted)', () => {
    const l = link();
    registry.attach(agent('agt_1', ['echo']), l);
    registry.dispatch('agt_1', dispatchOf('inv_1'));
    registry.disconnect('agt_1', 'deleted', 4403, 'agent deleted');
    expect(l.closedWith).toEqual({ code: 4403, reason: 'agent deleted' });
    expect(heard.at(-1)).toEqual({ kind: 'offline', agentId: 'agt_1', reason: 'deleted', running: ['inv_1'] });
  });

  it('setWorkspaces narrows what the agent serves from then on', () => {
    registry.attach(agent('agt_1', ['echo']), link());
    registry.setWorkspaces('agt_1', ['ws_b']);
    expect(registry.candidates('proj_a', 'ws_a', 'echo')).toEqual([]);
    expect(registry.candidates('proj_a', 'ws_b', 'echo').map((a) => a.workspaceIds)).toEqual([['ws_b']]);
  });

  describe('drain (a graceful stop)', () => {
    /** Whether the promise has settled, after the microtasks queued so far. */
    const settledYet = async (p: Promise<void>): Promise<boolean> => {
      let done = false;
      void p.then(() => (done = true));
      await new Promise((r) => setImmediate(r));
      return done;
    };

    it('sends draining, offers the agent no new work, and settles once its running invocations have reported', async () => {
      const l = link();
      registry.attach(agent('agt_1', ['echo']), l);
      registry.dispatch('agt_1', dispatchOf('inv_1'));
      registry.dispatch('agt_1', dispatchOf('inv_2'));
      const drained = registry.drain('agt_1', l);
      expect(l.sent.at(-1)).toEqual({ type: 'draining' });
      expect(registry.candidates('proj_a', 'ws_a', 'echo')).toEqual([]);
      expect(registry.online('proj_a', null)).toEqual([]);
      expect(registry.dispatch('agt_1', dispatchOf('inv_3'))).toBe(false);
      expect(l.sent.filter((m) => m.type === 'invocation.dispatch')).toHaveLength(2);

      // Still online: what it runs keeps reporting, and the drain waits for the last of it.
      registry.output('agt_1', l, 'inv_1', 'late output');
      registry.result('agt_1', l, 'inv_1', { exitCode: 0, output: null, error: null });
      expect(await settledYet(drained)).toBe(false);
      registry.cancel('agt_1', 'inv_2');
      expect(await settledYet(drained)).toBe(true);
      expect(heard.filter((h) => h.kind === 'output' || h.kind === 'result').map((h) => h.kind)).toEqual(['output', 'result']);
      expect(registry.isOnline('agt_1')).toBe(true);
      expect(l.closedWith).toBeNull();
    });

    it('settles at once for an idle agent, and when the agent goes offline first (reported with the given reason)', async () => {
      const idle = link();
      registry.attach(agent('agt_idle', ['echo']), idle);
      expect(await settledYet(registry.drain('agt_idle', idle))).toBe(true);

      const busy = link();
      registry.attach(agent('agt_busy', ['echo']), busy);
      registry.dispatch('agt_busy', dispatchOf('inv_1'));
      const drained = registry.drain('agt_busy', busy);
      expect(await settledYet(drained)).toBe(false);
      registry.detach('agt_busy', busy, 'gateway_stopping');
      expect(await settledYet(drained)).toBe(true);
      expect(heard.at(-1)).toEqual({ kind: 'offline', agentId: 'agt_busy', reason: 'gateway_stopping', running: ['inv_1'] });
    });
  });

  it('a subscriber that throws is reported and does not stop the others', () => {
    const seen: string[] = [];
    registry.subscribe({
      output: () => undefined,
      result: () => undefined,
      offline: () => undefined,
      online: () => {
        throw new Error('subscriber bug');
      },
    });
    registry.subscribe({ output: () => undefined, result: () => undefined, offline: () => undefined, online: (id) => void seen.push(id) });
    registry.attach(agent('agt_1', ['echo']), link());
    expect(seen).toEqual(['agt_1']);
    expect(errors).toHaveLength(1);
  });
});
