import { describe, expect, it } from 'vitest';
import * as a from '../../../../src/core/exec/approval-machine.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const CHAIN = [
  { target: 'oncall', timeoutMs: 1000 },
  { target: 'leads', timeoutMs: 2000 },
  { target: 'cto', timeoutMs: 4000 },
];

function requested(chain = CHAIN): a.Approval {
  return a.requestApproval({ id: 'app_1', projectId: 'proj_x', invocationId: 'inv_1', workspaceId: 'ws_01', toolName: 'rm', risk: 'destructive', chain, requester: a.NO_REQUESTER }, T0).approval;
}

describe('approval state machine', () => {
  it('needs an approval for destructive tools and for tools the workspace lists', () => {
    const policy = { approvalRequiredTools: ['deploy'], chain: CHAIN };
    expect(a.needsApproval('destructive', 'rm', policy)).toBe(true);
    expect(a.needsApproval('write', 'deploy', policy)).toBe(true);
    expect(a.needsApproval('write', 'echo', policy)).toBe(false);
  });

  it('is requested pending at the first stage, with exec.approval_requested', () => {
    const t = a.requestApproval({ id: 'app_1', projectId: 'proj_x', invocationId: 'inv_1', workspaceId: 'ws_01', toolName: 'rm', risk: 'destructive', chain: CHAIN, requester: a.NO_REQUESTER }, T0);
    expect(t.approval).toMatchObject({ state: 'pending', stage: 0, stageDeadlineAt: T0 + 1000 });
    expect(t.events).toEqual([
      { type: 'exec.approval_requested', data: { invocation_id: 'inv_1', approval_id: 'app_1', tool_name: 'rm', risk: 'destructive', workspace_id: 'ws_01', requested_at: '2026-01-01T12:00:00.000Z' } },
    ]);
  });

  it('is accepted with decided_by, once', () => {
    const t = a.accept(requested(), 'key_1', T0 + 10);
    expect(t?.approval).toMatchObject({ state: 'accepted', decidedBy: 'key_1', decidedAt: T0 + 10, stageDeadlineAt: null });
    expect(t?.events).toEqual([{ type: 'exec.approved', data: { invocation_id: 'inv_1', approval_id: 'app_1', decided_by: 'key_1', approved_at: '2026-01-01T12:00:00.010Z' } }]);
    expect(t && a.accept(t.approval, 'key_2', T0 + 20)).toBeNull();
    expect(t && a.reject(t.approval, 'key_2', null, T0 + 20)).toBeNull();
  });

  it('is rejected with the reason', () => {
    const t = a.reject(requested(), 'key_1', 'not today', T0 + 10);
    expect(t?.approval).toMatchObject({ state: 'rejected', reason: 'not today' });
    expect(t?.events).toEqual([{ type: 'exec.rejected', data: { invocation_id: 'inv_1', approval_id: 'app_1', reason: 'not today', rejected_at: '2026-01-01T12:00:00.010Z' } }]);
  });

  it('does nothing before the stage lapses', () => {
    expect(a.lapse(requested(), T0 + 999)).toBeNull();
  });

  it('escalates to the next stage when one lapses (stage 1-based)', () => {
    const t = a.lapse(requested(), T0 + 1000);
    expect(t?.approval).toMatchObject({ state: 'pending', stage: 1, stageDeadlineAt: T0 + 3000 });
    expect(t?.events).toEqual([
      { type: 'exec.approval_escalated', data: { invocation_id: 'inv_1', approval_id: 'app_1', stage: 2, target: 'leads', escalated_at: '2026-01-01T12:00:01.000Z' } },
    ]);
  });

  it('walks every lapsed stage in order when the clock jumps, then expires after the last', () => {
    const t = a.lapse(requested(), T0 + 60_000);
    expect(t?.events.map((e) => [e.type, e.data.stage ?? null])).toEqual([
      ['exec.approval_escalated', 2],
      ['exec.approval_escalated', 3],
      ['exec.approval_timed_out', null],
    ]);
    expect(t?.events[2]?.data).toEqual({ invocation_id: 'inv_1', approval_id: 'app_1', timed_out_at: '2026-01-01T12:00:07.000Z' });
    expect(t?.approval).toMatchObject({ state: 'expired', stage: 2, stageDeadlineAt: null });
    expect(t && a.lapse(t.approval, T0 + 120_000)).toBeNull();
  });

  it('expires a one-stage chain without escalating', () => {
    const t = a.lapse(requested([{ target: 'operators', timeoutMs: 900_000 }]), T0 + 900_000);
    expect(t?.events.map((e) => e.type)).toEqual(['exec.approval_timed_out']);
    expect(t?.approval.state).toBe('expired');
  });

  it('is withdrawn (expired, no event) when its invocation is cancelled', () => {
    expect(a.withdraw(requested(), T0 + 5)).toMatchObject({ state: 'expired', decidedAt: T0 + 5, decidedBy: null });
    const done = a.accept(requested(), 'k', T0)?.approval;
    expect(done && a.withdraw(done, T0 + 5)).toBeNull();
  });
});
