import { describe, expect, it } from 'vitest';
import { GatewayError, type ErrorCode } from '../../../src/errors.js';
import type { CreateRequest } from '../../../src/exec/invocations/invocation-service.js';
import type { WatchEvent } from '../../../src/exec/invocations/invocation-watch.js';
import { execFixture, PROJECT, tool, WS, type Fixture } from './exec-fixture.js';

function request(overrides: Partial<CreateRequest> = {}): CreateRequest {
  return { projectId: PROJECT, workspaceId: WS, toolName: 'echo', arguments: {}, timeoutMs: 60_000, idempotency: null, requester: { keyId: 'key_1', userId: null }, ...overrides };
}

async function refusal(fn: () => unknown): Promise<GatewayError> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error('not refused');
}

async function expectRefused(fn: () => unknown, code: ErrorCode, status?: number): Promise<void> {
  const e = await refusal(fn);
  expect(e.code).toBe(code);
  if (status !== undefined) expect(e.status).toBe(status);
}

function withAgent(f: Fixture = execFixture()): Fixture {
  f.registry.add('agt_1', [tool('echo', 'read', { type: 'object', properties: { text: { type: 'string' } } }), tool('rm', 'destructive'), tool('deploy', 'write')]);
  return f;
}

describe('creating invocations', () => {
  it('dispatches at once to an online agent, with exec.dispatched in the same commit', async () => {
    const f = withAgent();
    const { invocation, created } = await f.service.create(request({ arguments: { text: 'hi' }, timeoutMs: 5000 }));
    expect(created).toBe(true);
    expect(invocation).toMatchObject({ status: 'dispatched', agentId: 'agt_1', risk: 'read', approvalId: null });
    expect(invocation.id).toMatch(/^inv_[0-9a-f]{24}$/);
    expect(f.registry.sent).toEqual([{ agentId: 'agt_1', message: { invocationId: invocation.id, toolName: 'echo', arguments: { text: 'hi' }, timeoutMs: 5000 } }]);
    expect(f.events().map(([t]) => t)).toEqual(['exec.dispatched']);
    expect((await f.port.invocation(invocation.id))?.status).toBe('dispatched');
  });

  it('picks the least busy candidate (the registry orders them)', async () => {
    const f = execFixture();
    f.registry.add('agt_busy', [tool('echo')]);
    f.registry.add('agt_idle', [tool('echo')]);
    f.registry.agents.reverse();
    expect((await f.service.create(request())).invocation.agentId).toBe('agt_idle');
  });

  it('refuses a tool no online agent serving the workspace offers: 400 exec_tool_not_found', async () => {
    const f = execFixture();
    f.registry.add('agt_1', [tool('echo')], ['ws_other']);
    await expectRefused(() => f.service.create(request()), 'exec_tool_not_found', 400);
    await expectRefused(() => f.service.create(request({ toolName: 'nope' })), 'exec_tool_not_found', 400);
  });

  it('refuses arguments that do not match the input_schema: invalid_body', async () => {
    const e = await refusal(() => withAgent().service.create(request({ arguments: { text: 5 } })));
    expect({ code: e.code, param: e.param }).toEqual({ code: 'invalid_body', param: 'arguments/text' });
  });

  it('stays queued when the agent went away between the choice and the send, and goes out once one comes online', async () => {
    const f = withAgent();
    f.registry.refuse = true;
    const { invocation } = await f.service.create(request());
    expect(invocation.status).toBe('queued');
    f.registry.refuse = false;
    await f.registry.reports?.online('agt_1');
    expect((await f.port.invocation(invocation.id))?.status).toBe('dispatched');
  });
});

describe('Idempotency-Key', () => {
  const idem = (bodyHash: string) => ({ key: 'k-1', bodyHash });

  it('returns the first invocation for the same key and body', async () => {
    const f = withAgent();
    const first = await f.service.create(request({ idempotency: idem('h1') }));
    const again = await f.service.create(request({ idempotency: idem('h1') }));
    expect(again.created).toBe(false);
    expect(again.invocation.id).toBe(first.invocation.id);
    expect(f.registry.sent).toHaveLength(1);
  });

  it('refuses the same key with another body: 409 exec_idempotency_conflict', async () => {
    const f = withAgent();
    await f.service.create(request({ idempotency: idem('h1') }));
    await expectRefused(() => f.service.create(request({ idempotency: idem('h2') })), 'exec_idempotency_conflict', 409);
  });

  it('keeps a key 24 hours, then lets it name a new invocation', async () => {
    const f = withAgent();
    const first = await f.service.create(request({ idempotency: idem('h1') }));
    f.advance(24 * 3600_000);
    const later = await f.service.create(request({ idempotency: idem('h2') }));
    expect(later.created).toBe(true);
    expect(later.invocation.id).not.toBe(first.invocation.id);
  });

  it('lets the key row decide between two writers that both found it free', async () => {
    const f = withAgent();
    const a = (await f.service.create(request())).invocation;
    const b = { ...a, id: 'inv_bbbbbbbbbbbbbbbbbbbbbbbb' };
    const c = { ...a, id: 'inv_cccccccccccccccccccccccc' };
    const key = { key: 'race', bodyHash: 'same', expiresAt: f.now() + 1000 };
    expect((await f.port.create(b, null, [], key, f.now())).kind).toBe('created');
    const second = await f.port.create(c, null, [], key, f.now());
    expect(second.kind === 'replayed' && second.invocation.id).toBe(b.id);
    expect((await f.port.create(c, null, [], { ...key, bodyHash: 'other' }, f.now())).kind).toBe('conflict');
    expect(await f.port.invocation(c.id)).toBeNull();
  });
});

describe('what agents report', () => {
  it('goes running at the first output and completes on exit 0 with the output and duration', async () => {
    const f = withAgent();
    const { invocation } = await f.service.create(request());
    f.advance(40);
    await f.registry.reports?.output('agt_1', invocation.id, 'hello ');
    expect(await f.service.get(PROJECT, invocation.id)).toMatchObject({ status: 'running', output: 'hello ' });
    f.advance(60);
    await f.registry.reports?.result('agt_1', invocation.id, { exitCode: 0, output: 'world', error: null });
    const done = await f.service.get(PROJECT, invocation.id);
    expect(done).toMatchObject({ status: 'completed', exitCode: 0, durationMs: 100, output: 'hello world', outputTruncated: false, error: null });
    expect(f.events().map(([t]) => t)).toEqual(['exec.dispatched', 'exec.completed']);
    expect(f.events()[1]?.[1]).toMatchObject({ invocation_id: invocation.id, status: 'success', duration_ms: 100, exit_code: 0 });
  });

  it('caps the output at exec.output_cap_bytes and says it was truncated', async () => {
    const f = withAgent(execFixture({ capBytes: 1024 }));
    const { invocation } = await f.service.create(request());
    await f.registry.reports?.output('agt_1', invocation.id, 'x'.repeat(1000));
    await f.registry.reports?.output('agt_1', invocation.id, 'y'.repeat(1000));
    await f.registry.reports?.result('agt_1', invocation.id, { exitCode: 0, output: null, error: null });
    const done = await f.service.get(PROJECT, invocation.id);
    expect(done.output).toBe('x'.repeat(1000) + 'y'.repeat(24));
    expect(done.outputTruncated).toBe(true);
  });

  it('fails a non-zero exit with non_zero_exit', async () => {
    const f = withAgent();
    const { invocation } = await f.service.create(request());
    await f.registry.reports?.result('agt_1', invocation.id, { exitCode: 2, output: 'oops', error: 'No such file' });
    expect(await f.service.get(PROJECT, invocation.id)).toMatchObject({ status: 'failed', exitCode: 2, output: 'oops', error: { code: 'non_zero_exit', message: 'No such file' } });
    expect(f.events()[1]).toEqual(['exec.failed', expect.objectContaining({ error_code: 'non_zero_exit', error_message: 'No such file' })]);
  });

  it('ignores reports from another agent and after the end', async () => {
    const f = withAgent();
    const { invocation } = await f.service.create(request());
    await f.registry.reports?.result('agt_other', invocation.id, { exitCode: 0, output: null, error: null });
    expect((await f.service.get(PROJECT, invocation.id)).status).toBe('dispatched');
    await f.registry.reports?.result('agt_1', invocation.id, { exitCode: 0, output: null, error: null });
    await f.registry.reports?.result('agt_1', invocation.id, { exitCode: 1, output: 'late', error: null });
    await f.registry.reports?.output('agt_1', invocation.id, 'late');
    expect(await f.service.get(PROJECT, invocation.id)).toMatchObject({ status: 'completed', output: '' });
  });

  it('fails every invocation of an agent that went offline: exec.agent_offline then exec.failed', async () => {
    const f = withAgent();
    const one = (await f.service.create(request())).invocation;
    const two = (await f.service.create(request())).invocation;
    await f.registry.reports?.output('agt_1', two.id, 'partial');
    await f.registry.reports?.offline({ id: 'agt_1', projectId: PROJECT }, 'lease_expired', [one.id]);
    for (const inv of [one, two]) expect(await f.service.get(PROJECT, inv.id)).toMatchObject({ status: 'failed', error: { code: 'agent_offline' } });
    expect((await f.service.get(PROJECT, two.id)).output).toBe('partial');
    const types = f.events().map(([t, d]) => `${t}:${String(d.invocation_id === one.id ? 'one' : 'two')}`);
    expect(types.slice(2)).toEqual(['exec.agent_offline:one', 'exec.failed:one', 'exec.agent_offline:two', 'exec.failed:two']);
    expect(f.events()[2]?.[1]).toEqual({ invocation_id: one.id, agent_id: 'agt_1', reason: 'lease_expired', detected_at: '2026-01-01T12:00:00.000Z' });
  });

  it('reports an agent that went offline running nothing: one exec.agent_offline, invocation_id null', async () => {
    const f = withAgent();
    const before = f.events().length;
    await f.registry.reports?.offline({ id: 'agt_1', projectId: PROJECT }, 'disconnected', []);
    expect(f.events().slice(before)).toEqual([['exec.agent_offline', { invocation_id: null, agent_id: 'agt_1', reason: 'disconnected', detected_at: '2026-01-01T12:00:00.000Z' }]]);
  });
});

describe('the clock', () => {
  it('times out a dispatched invocation: exec.timeout, and the agent is told to stop', async () => {
    const f = withAgent();
    const { invocation } = await f.service.create(request({ timeoutMs: 1000 }));
    f.advance(999);
    expect(await f.service.expireDue()).toBe(0);
    f.advance(1);
    expect(await f.service.expireDue()).toBe(1);
    expect(await f.service.get(PROJECT, invocation.id)).toMatchObject({ status: 'failed', error: { code: 'timeout' } });
    expect(f.events().at(-1)).toEqual(['exec.timeout', { invocation_id: invocation.id, timeout_ms: 1000, elapsed_ms: 1000, timed_out_at: '2026-01-01T12:00:01.000Z' }]);
    expect(f.registry.cancelled).toEqual([{ agentId: 'agt_1', invocationId: invocation.id }]);
  });

  it('times out a queued invocation no agent took', async () => {
    const f = withAgent();
    f.registry.refuse = true;
    const { invocation } = await f.service.create(request({ timeoutMs: 500 }));
    f.advance(500);
    await f.service.expireDue();
    expect((await f.service.get(PROJECT, invocation.id)).status).toBe('failed');
    expect(f.registry.cancelled).toEqual([]);
  });
});

describe('approvals', () => {
  const chain = [
    { target: 'oncall', timeoutMs: 1000 },
    { target: 'leads', timeoutMs: 2000 },
  ];

  it('holds a destructive invocation for an approval, and dispatches it once accepted', async () => {
    const f = withAgent();
    const { invocation } = await f.service.create(request({ toolName: 'rm' }));
    expect(invocation).toMatchObject({ status: 'pending_approval', risk: 'destructive' });
    expect(invocation.approvalId).toMatch(/^app_[0-9a-f]{24}$/);
    expect(f.registry.sent).toEqual([]);
    const approval = await f.service.accept(PROJECT, invocation.approvalId ?? '', 'key_1');
    expect(approval).toMatchObject({ state: 'accepted', decidedBy: 'key_1' });
    expect((await f.service.get(PROJECT, invocation.id)).status).toBe('dispatched');
    expect(f.events().map(([t]) => t)).toEqual(['exec.approval_requested', 'exec.approved', 'exec.dispatched']);
  });

  it('holds a tool the workspace lists although it is not destructive', async () => {
    expect((await withAgent().service.create(request({ toolName: 'deploy' }))).invocation.status).toBe('pending_approval');
  });

  it('fails the invocation when the approval is rejected (approval_rejected), with the reason', async () => {
    const f = withAgent();
    const { invocation } = await f.service.create(request({ toolName: 'rm' }));
    await f.service.reject(PROJECT, invocation.approvalId ?? '', 'key_1', 'too risky');
    expect(await f.service.get(PROJECT, invocation.id)).toMatchObject({ status: 'failed', error: { code: 'approval_rejected', message: 'The approval was rejected: too risky' } });
    expect(f.events().map(([t]) => t)).toEqual(['exec.approval_requested', 'exec.rejected', 'exec.failed']);
  });

  it('refuses a second decision (approval_not_pending) and another project (approval_not_found)', async () => {
    const f = withAgent();
    const { invocation } = await f.service.create(request({ toolName: 'rm' }));
    const id = invocation.approvalId ?? '';
    await f.service.accept(PROJECT, id, 'k');
    await expectRefused(() => f.service.accept(PROJECT, id, 'k'), 'approval_not_pending', 409);
    await expectRefused(() => f.service.reject(PROJECT, id, 'k', null), 'approval_not_pending', 409);
    await expectRefused(() => f.service.accept('proj_b', id, 'k'), 'approval_not_found', 404);
  });

  it('escalates along the chain on the clock, then expires and fails the invocation (approval_expired)', async () => {
    const f = withAgent(execFixture({ policy: { approvalRequiredTools: [], chain } }));
    const { invocation } = await f.service.create(request({ toolName: 'rm', timeoutMs: 10 }));
    f.advance(1000);
    await f.service.lapseDue();
    expect(await f.port.approval(invocation.approvalId ?? '')).toMatchObject({ state: 'pending', stage: 1 });
    // The invocation's own timeout does not run while it waits for the approval.
    await f.service.expireDue();
    expect((await f.service.get(PROJECT, invocation.id)).status).toBe('pending_approval');
    f.advance(2000);
    await f.service.lapseDue();
    expect((await f.port.approval(invocation.approvalId ?? ''))?.state).toBe('expired');
    expect(await f.service.get(PROJECT, invocation.id)).toMatchObject({ status: 'failed', error: { code: 'approval_expired' } });
    expect(f.events().map(([t]) => t)).toEqual(['exec.approval_requested', 'exec.approval_escalated', 'exec.approval_timed_out', 'exec.failed']);
    expect(f.events()[1]?.[1]).toMatchObject({ stage: 2, target: 'leads' });
  });
});

describe('cancel', () => {
  it('cancels a dispatched invocation and tells its agent', async () => {
    const f = withAgent();
    const { invocation } = await f.service.create(request());
    expect((await f.service.cancel(PROJECT, invocation.id)).status).toBe('cancelled');
    expect(f.registry.cancelled).toEqual([{ agentId: 'agt_1', invocationId: invocation.id }]);
    await expectRefused(() => f.service.cancel(PROJECT, invocation.id), 'invocation_terminal', 409);
  });

  it('cancels an invocation waiting for its approval, and withdraws the approval', async () => {
    const f = withAgent();
    const { invocation } = await f.service.create(request({ toolName: 'rm' }));
    await f.service.cancel(PROJECT, invocation.id);
    expect((await f.port.approval(invocation.approvalId ?? ''))?.state).toBe('expired');
    await expectRefused(() => f.service.accept(PROJECT, invocation.approvalId ?? '', 'k'), 'approval_not_pending');
  });

  it("answers 404 invocation_not_found for another project's invocation", async () => {
    const f = withAgent();
    const { invocation } = await f.service.create(request());
    await expectRefused(() => f.service.get('proj_b', invocation.id), 'invocation_not_found', 404);
    await expectRefused(() => f.service.cancel('proj_b', invocation.id), 'invocation_not_found', 404);
  });
});

describe('live readers', () => {
  it('hear every status change and output, in order', async () => {
    const f = withAgent();
    const { invocation } = await f.service.create(request());
    const heard: WatchEvent[] = [];
    const { stop } = await f.service.follow(PROJECT, invocation.id, (e) => heard.push(e));
    await f.registry.reports?.output('agt_1', invocation.id, 'a');
    await f.registry.reports?.output('agt_1', invocation.id, 'b');
    await f.registry.reports?.result('agt_1', invocation.id, { exitCode: 0, output: null, error: null });
    stop();
    expect(heard).toEqual([
      { kind: 'status', status: 'running' },
      { kind: 'output', data: 'a' },
      { kind: 'output', data: 'b' },
      { kind: 'status', status: 'completed' },
    ]);
    expect(f.service.watch.watched).toBe(0);
  });
});

describe('restart', () => {
  it('fails what was dispatched or running (gateway_restarted) and keeps queued and pending ones', async () => {
    const f = withAgent();
    const dispatched = (await f.service.create(request())).invocation;
    const running = (await f.service.create(request())).invocation;
    await f.registry.reports?.output('agt_1', running.id, 'x');
    const pending = (await f.service.create(request({ toolName: 'rm' }))).invocation;
    f.registry.refuse = true;
    const queued = (await f.service.create(request())).invocation;

    const after = execFixture({ db: f.db });
    expect(await after.service.recover()).toBe(2);
    for (const inv of [dispatched, running]) expect(await after.service.get(PROJECT, inv.id)).toMatchObject({ status: 'failed', error: { code: 'gateway_restarted' } });
    expect((await after.service.get(PROJECT, pending.id)).status).toBe('pending_approval');
    expect((await after.service.get(PROJECT, queued.id)).status).toBe('queued');
    after.registry.add('agt_2', [tool('echo')]);
    await after.registry.reports?.online('agt_2');
    expect(await after.service.get(PROJECT, queued.id)).toMatchObject({ status: 'dispatched', agentId: 'agt_2' });
  });
});
