import { describe, expect, it } from 'vitest';
import * as m from '../../../../src/core/exec/invocation-machine.js';
import type { Invocation } from '../../../../src/core/exec/invocation-machine.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

function fresh(overrides: Partial<m.NewInvocation> = {}): Invocation {
  return m.createInvocation(
    { id: 'inv_000000000000000000000001', projectId: 'proj_x', workspaceId: 'ws_01', toolName: 'echo', arguments: { a: 1 }, risk: 'read', timeoutMs: 1000, approvalId: null, ...overrides },
    T0,
  );
}

function dispatched(): Invocation {
  const t = m.dispatch(fresh(), 'agt_1', T0 + 10);
  if (!t) throw new Error('dispatch refused');
  return t.invocation;
}

describe('invocation state machine', () => {
  it('starts queued, its timeout clock running from creation', () => {
    const inv = fresh();
    expect(inv.status).toBe('queued');
    expect(m.deadlineOf(inv)).toBe(T0 + 1000);
  });

  it('starts pending_approval when an approval is needed, with no deadline until it is approved', () => {
    const inv = fresh({ approvalId: 'app_1' });
    expect(inv.status).toBe('pending_approval');
    expect(m.deadlineOf(inv)).toBeNull();
    expect(m.timeOut(inv, T0 + 10_000_000)).toBeNull();
    const ready = m.approve(inv, T0 + 5000);
    expect(ready?.status).toBe('queued');
    expect(ready && m.deadlineOf(ready)).toBe(T0 + 6000);
  });

  it('refuses to approve what is not waiting for an approval', () => {
    expect(m.approve(fresh(), T0)).toBeNull();
  });

  it('dispatches a queued invocation with exec.dispatched carrying SPEC fields exactly', () => {
    const t = m.dispatch(fresh(), 'agt_1', T0 + 10);
    expect(t?.invocation).toMatchObject({ status: 'dispatched', agentId: 'agt_1', dispatchedAt: T0 + 10 });
    expect(t?.events).toEqual([
      {
        type: 'exec.dispatched',
        data: { invocation_id: 'inv_000000000000000000000001', tool_name: 'echo', workspace_id: 'ws_01', agent_id: 'agt_1', risk: 'read', dispatched_at: '2026-01-01T12:00:00.010Z' },
      },
    ]);
  });

  it('does not dispatch twice', () => {
    expect(m.dispatch(dispatched(), 'agt_2', T0 + 20)).toBeNull();
  });

  it('gives the agent what is left of the timeout', () => {
    expect(m.remainingMs(fresh(), T0 + 300)).toBe(700);
    expect(m.remainingMs(fresh(), T0 + 5000)).toBe(1);
  });

  it('goes running at the first output, once', () => {
    const running = m.markRunning(dispatched());
    expect(running?.status).toBe('running');
    expect(running && m.markRunning(running)).toBeNull();
    expect(m.markRunning(fresh())).toBeNull();
  });

  it('completes on exit 0 with exec.completed (status success, duration from dispatch)', () => {
    const t = m.finish(dispatched(), { exitCode: 0, error: null }, T0 + 510);
    expect(t?.invocation).toMatchObject({ status: 'completed', exitCode: 0, durationMs: 500, completedAt: T0 + 510, error: null });
    expect(t?.events).toEqual([{ type: 'exec.completed', data: { invocation_id: 'inv_000000000000000000000001', status: 'success', duration_ms: 500, exit_code: 0, completed_at: '2026-01-01T12:00:00.510Z' } }]);
  });

  it('fails on a non-zero exit with error_code non_zero_exit', () => {
    const running = m.markRunning(dispatched());
    const t = running && m.finish(running, { exitCode: 3, error: 'boom' }, T0 + 110);
    expect(t?.invocation).toMatchObject({ status: 'failed', exitCode: 3, error: { code: 'non_zero_exit', message: 'boom' } });
    expect(t?.events).toEqual([{ type: 'exec.failed', data: { invocation_id: 'inv_000000000000000000000001', error_code: 'non_zero_exit', error_message: 'boom', failed_at: '2026-01-01T12:00:00.110Z' } }]);
  });

  it('ignores a result for an invocation that is not out (queued, or already over)', () => {
    expect(m.finish(fresh(), { exitCode: 0, error: null }, T0)).toBeNull();
    const done = m.finish(dispatched(), { exitCode: 0, error: null }, T0 + 20)?.invocation;
    expect(done && m.finish(done, { exitCode: 1, error: null }, T0 + 30)).toBeNull();
  });

  it('times out at its deadline with exec.timeout in place of exec.failed', () => {
    const inv = dispatched();
    expect(m.timeOut(inv, T0 + 999)).toBeNull();
    const t = m.timeOut(inv, T0 + 1200);
    expect(t?.invocation).toMatchObject({ status: 'failed', error: { code: 'timeout' }, durationMs: 1190 });
    expect(t?.events).toEqual([{ type: 'exec.timeout', data: { invocation_id: 'inv_000000000000000000000001', timeout_ms: 1000, elapsed_ms: 1200, timed_out_at: '2026-01-01T12:00:01.200Z' } }]);
  });

  it('reads a failure the agent reports after the deadline as the timeout (its kill beat the gateway clock tick)', () => {
    // The agent is sent what is left of timeout_ms and stops the command then (exit 143); that report can
    // arrive before the gateway's own 100 ms tick, and must not turn the timeout into non_zero_exit.
    const t = m.finish(dispatched(), { exitCode: 143, error: 'timed out after 990 ms' }, T0 + 1044);
    expect(t?.invocation).toMatchObject({ status: 'failed', error: { code: 'timeout' } });
    expect(t?.events).toEqual([{ type: 'exec.timeout', data: { invocation_id: 'inv_000000000000000000000001', timeout_ms: 1000, elapsed_ms: 1044, timed_out_at: '2026-01-01T12:00:01.044Z' } }]);
    // Before the deadline a failure is the tool's own; a success after it still completes.
    expect(m.finish(dispatched(), { exitCode: 3, error: null }, T0 + 999)?.invocation.error?.code).toBe('non_zero_exit');
    expect(m.finish(dispatched(), { exitCode: 0, error: null }, T0 + 1044)?.invocation.status).toBe('completed');
  });

  it('times out while still queued (no agent took it)', () => {
    expect(m.timeOut(fresh(), T0 + 1000)?.invocation.status).toBe('failed');
  });

  it('fails with the events that explain it first (agent_offline then exec.failed)', () => {
    const before = [{ type: 'exec.agent_offline' as const, data: { invocation_id: 'x' } }];
    const t = m.fail(dispatched(), 'agent_offline', 'gone', T0 + 50, before);
    expect(t?.events.map((e) => e.type)).toEqual(['exec.agent_offline', 'exec.failed']);
    expect(t?.invocation.error).toEqual({ code: 'agent_offline', message: 'gone' });
  });

  it('cancels any live invocation without an event, and refuses a terminal one', () => {
    for (const inv of [fresh(), fresh({ approvalId: 'app_1' }), dispatched()]) {
      const t = m.cancel(inv, T0 + 5);
      expect(t?.invocation.status).toBe('cancelled');
      expect(t?.events).toEqual([]);
      expect(t && m.cancel(t.invocation, T0 + 6)).toBeNull();
    }
  });

  it('keeps every terminal state final', () => {
    const ends = [
      m.finish(dispatched(), { exitCode: 0, error: null }, T0 + 20)?.invocation,
      m.fail(dispatched(), 'x', 'y', T0 + 20)?.invocation,
      m.cancel(dispatched(), T0 + 20)?.invocation,
    ];
    for (const end of ends) {
      if (!end) throw new Error('no end state');
      expect(m.isTerminal(end.status)).toBe(true);
      expect(m.deadlineOf(end)).toBeNull();
      expect(m.dispatch(end, 'agt_2', T0 + 30)).toBeNull();
      expect(m.markRunning(end)).toBeNull();
      expect(m.fail(end, 'x', 'y', T0 + 30)).toBeNull();
      expect(m.timeOut(end, T0 + 1_000_000)).toBeNull();
      expect(m.cancel(end, T0 + 30)).toBeNull();
      expect(m.approve(end, T0 + 30)).toBeNull();
    }
  });
});
