/**
 * Two gateway instances on one store (issue 12): two services, each with its own connection to one
 * SQLite file, its own agents and its own clock. Each acts on rows it read a moment before, so these
 * tests put the other instance's work exactly in that moment: instance B reads (its queued retry, its
 * clock's due rows, a cancel's record), then A applies the same transition, then B commits. Before the
 * commits were guarded by the state they were computed from, B's commit overwrote A's: a queued
 * invocation went to two agents, and a timeout wrote `exec.timeout` twice.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/errors.js';
import type { CreateRequest } from '../../../src/exec/invocations/invocation-service.js';
import type { WatchEvent } from '../../../src/exec/invocations/invocation-watch.js';
import type { ApprovalPolicy } from '../../../src/core/exec/approval-machine.js';
import { execFixture, PROJECT, tool, WS, type Fixture } from './exec-fixture.js';

const TIMEOUT_MS = 5000;

function request(overrides: Partial<CreateRequest> = {}): CreateRequest {
  return { projectId: PROJECT, workspaceId: WS, toolName: 'echo', arguments: {}, timeoutMs: TIMEOUT_MS, idempotency: null, requester: { keyId: 'key_1', userId: null }, ...overrides };
}

const dirs: string[] = [];
const fixtures: Fixture[] = [];

afterEach(() => {
  for (const f of fixtures.splice(0)) f.db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** `deploy` waits for an approval, in two stages of a second each. */
const POLICY: ApprovalPolicy = { approvalRequiredTools: ['deploy'], chain: [{ target: 'leads', timeoutMs: 1000 }, { target: 'admins', timeoutMs: 1000 }] };

/** Instances A and B on one file, each with an online agent (agt_a on A, agt_b on B) offering `echo` and `deploy`. */
function twoInstances(): { a: Fixture; b: Fixture } {
  const dir = mkdtempSync(join(tmpdir(), 'exec-instances-'));
  dirs.push(dir);
  const path = join(dir, 'store.db');
  const a = execFixture({ path, owner: 'inst_a', policy: POLICY });
  const b = execFixture({ path, owner: 'inst_b', policy: POLICY });
  fixtures.push(a, b);
  a.registry.add('agt_a', [tool('echo'), tool('deploy', 'write')]);
  b.registry.add('agt_b', [tool('echo'), tool('deploy', 'write')]);
  return { a, b };
}

/** Both clocks past the invocation's deadline. */
function pastDeadline(...fs: Fixture[]): void {
  for (const f of fs) f.advance(TIMEOUT_MS + 1);
}

/** `fn` runs (to its end) right after the store method's read, before the caller acts on what it read. */
function afterRead<K extends 'withStatus' | 'dueInvocations' | 'dueApprovals' | 'invocation' | 'approval' | 'create'>(f: Fixture, method: K, fn: () => unknown): void {
  const port = f.port as unknown as Record<K, (...args: never[]) => Promise<unknown>>;
  const read = port[method];
  let done = false;
  port[method] = async (...args: never[]) => {
    const rows = await read(...args);
    if (!done) {
      done = true;
      await fn();
    }
    return rows;
  };
}

/** A queued invocation created on A (its agent refused the send), visible to both. */
async function queuedOnA(a: Fixture): Promise<string> {
  a.registry.refuse = true;
  const { invocation } = await a.service.create(request());
  a.registry.refuse = false;
  expect(invocation.status).toBe('queued');
  return invocation.id;
}

const ownerOf = (f: Fixture, id: string): unknown => f.db.prepare('SELECT owner_instance FROM exec_invocations WHERE id = ?').pluck().get(id);
const types = (f: Fixture): string[] => f.events().map(([t]) => t);

describe('the queued -> dispatched claim', () => {
  it('dispatches a queued invocation both instances read to one agent: the second claim finds it taken and sends nothing', async () => {
    const { a, b } = twoInstances();
    const id = await queuedOnA(a);
    afterRead(b, 'withStatus', () => a.service.retryQueued());
    await b.service.retryQueued();
    expect(a.registry.sent.map((s) => s.message.invocationId)).toEqual([id]);
    expect(b.registry.sent).toEqual([]);
    expect(b.registry.cancelled).toEqual([]);
    expect(types(a)).toEqual(['exec.dispatched']);
    expect(await a.port.invocation(id)).toMatchObject({ status: 'dispatched', agentId: 'agt_a' });
    expect(ownerOf(a, id)).toBe('inst_a');
  });

  it('leaves the claim unmade when the agent is gone at the send, so a sibling may dispatch it', async () => {
    const { a, b } = twoInstances();
    const id = await queuedOnA(a);
    a.registry.refuse = true;
    await a.service.retryQueued();
    expect((await a.port.invocation(id))?.status).toBe('queued');
    expect(types(a)).toEqual([]);
    await b.service.retryQueued();
    expect(await b.port.invocation(id)).toMatchObject({ status: 'dispatched', agentId: 'agt_b' });
    expect(ownerOf(b, id)).toBe('inst_b');
    expect(types(b)).toEqual(['exec.dispatched']);
  });

  it('answers a create with the invocation as a sibling left it when the sibling dispatched it first', async () => {
    const { a, b } = twoInstances();
    // B's retry runs between A's insert and A's claim.
    afterRead(a, 'create', () => b.service.retryQueued());
    const { invocation } = await a.service.create(request());
    expect(invocation).toMatchObject({ status: 'dispatched', agentId: 'agt_b' });
    expect(a.registry.sent).toEqual([]);
    expect(types(a)).toEqual(['exec.dispatched']);
  });
});

describe('timeouts applied by two clocks', () => {
  it.each([
    ['queued', (a: Fixture) => queuedOnA(a)],
    ['dispatched', async (a: Fixture) => (await a.service.create(request())).invocation.id],
  ])('writes one exec.timeout for a %s invocation both clocks found due', async (_status, make) => {
    const { a, b } = twoInstances();
    const id = await make(a);
    pastDeadline(a, b);
    afterRead(b, 'dueInvocations', () => a.service.expireDue());
    await b.service.expireDue();
    await a.service.expireDue();
    expect(types(a).filter((t) => t !== 'exec.dispatched')).toEqual(['exec.timeout']);
    expect(await a.port.invocation(id)).toMatchObject({ status: 'failed', error: { code: 'timeout' } });
  });

  it('stops the agent when a sibling times out an invocation this instance dispatched, and tells its readers', async () => {
    const { a, b } = twoInstances();
    const { invocation } = await a.service.create(request());
    const seen: WatchEvent[] = [];
    a.service.watch.subscribe(invocation.id, (e) => seen.push(e));
    pastDeadline(b);
    await b.service.expireDue();
    // B's word to agt_a goes to its own registry, where agt_a is not connected.
    expect(a.registry.cancelled).toEqual([]);
    await a.service.reconcile();
    expect(a.registry.cancelled).toEqual([{ agentId: 'agt_a', invocationId: invocation.id }]);
    expect(seen).toEqual([{ kind: 'status', status: 'failed' }]);
    // Its own clock comes to the same deadline: nothing more is written.
    pastDeadline(a);
    await a.service.expireDue();
    expect(types(a)).toEqual(['exec.dispatched', 'exec.timeout']);
  });

  it('ignores the agent\'s result that arrives while a sibling times the invocation out', async () => {
    const { a, b } = twoInstances();
    const { invocation } = await a.service.create(request());
    pastDeadline(b);
    afterRead(a, 'invocation', () => b.service.expireDue());
    await a.registry.reports?.result('agt_a', invocation.id, { exitCode: 0, output: 'done', error: null });
    expect(types(a)).toEqual(['exec.dispatched', 'exec.timeout']);
    expect(await a.port.invocation(invocation.id)).toMatchObject({ status: 'failed', error: { code: 'timeout' } });
    // The agent has finished: nothing to stop.
    await a.service.reconcile();
    expect(a.registry.cancelled).toEqual([]);
  });
});

describe('cancels and approvals across instances', () => {
  it('refuses a cancel with 409 invocation_terminal when a sibling timed the invocation out after the cancel read it', async () => {
    const { a, b } = twoInstances();
    const { invocation } = await a.service.create(request());
    pastDeadline(a);
    afterRead(b, 'invocation', () => a.service.expireDue());
    let refused: unknown = null;
    try {
      await b.service.cancel(PROJECT, invocation.id);
    } catch (err) {
      refused = err;
    }
    expect(refused instanceof GatewayError && refused.code).toBe('invocation_terminal');
    expect(types(a)).toEqual(['exec.dispatched', 'exec.timeout']);
  });

  it('cancels what the invocation has become when a sibling dispatched it after the cancel read it', async () => {
    const { a, b } = twoInstances();
    const id = await queuedOnA(a);
    afterRead(b, 'invocation', () => a.service.retryQueued());
    expect(await b.service.cancel(PROJECT, id)).toMatchObject({ status: 'cancelled', agentId: 'agt_a' });
    expect((await a.port.invocation(id))?.status).toBe('cancelled');
    await a.service.reconcile();
    expect(a.registry.cancelled).toEqual([{ agentId: 'agt_a', invocationId: id }]);
  });

  it('writes one escalation when two clocks lapse the same approval stage', async () => {
    const { a, b } = twoInstances();
    const { invocation } = await a.service.create(request({ toolName: 'deploy' }));
    expect(invocation.status).toBe('pending_approval');
    a.advance(1500);
    b.advance(1500);
    afterRead(b, 'dueApprovals', () => a.service.lapseDue());
    await b.service.lapseDue();
    await a.service.lapseDue();
    expect(types(a)).toEqual(['exec.approval_requested', 'exec.approval_escalated']);
    expect(await a.port.approval(invocation.approvalId ?? '')).toMatchObject({ state: 'pending', stage: 1 });
  });

  it('accepts an approval once when it is accepted on both instances at the same moment: the second is 409 approval_not_pending', async () => {
    const { a, b } = twoInstances();
    const { invocation } = await a.service.create(request({ toolName: 'deploy' }));
    const approvalId = invocation.approvalId ?? '';
    afterRead(b, 'approval', () => a.service.accept(PROJECT, approvalId, 'key_a'));
    let refused: unknown = null;
    try {
      await b.service.accept(PROJECT, approvalId, 'key_b');
    } catch (err) {
      refused = err;
    }
    expect(refused instanceof GatewayError && refused.code).toBe('approval_not_pending');
    expect(types(a)).toEqual(['exec.approval_requested', 'exec.approved', 'exec.dispatched']);
    expect(await a.port.approval(approvalId)).toMatchObject({ state: 'accepted', decidedBy: 'key_a' });
    expect(b.registry.sent).toEqual([]);
  });
});
