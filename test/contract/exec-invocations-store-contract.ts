/**
 * The exec invocations storage port (src/core/store/exec-invocations-store.ts): one suite, run against
 * SQLite and PostgreSQL by exec-invocations-store.test.ts. Project `proj_a` exists and subscribes to the
 * exec events; the store writes as instance `OWNER`, which the fixture registers as live; `events()` lists
 * the event types written, oldest first.
 */
import { afterEach, describe, expect, it } from 'vitest';
import * as approvals from '../../src/core/exec/approval-machine.js';
import * as machine from '../../src/core/exec/invocation-machine.js';
import type { Invocation } from '../../src/core/exec/invocation-machine.js';
import type { Change, ExecInvocationsStore } from '../../src/core/store/exec-invocations-store.js';

export const OWNER = 'inst_exec_contract';

export interface ExecInvocationsStoreFixture {
  /** Writes as OWNER. */
  readonly store: ExecInvocationsStore;
  /** Deletes OWNER's registration, as a sibling's sweep does for a dead one. */
  unregister(): Promise<void>;
  events(): Promise<string[]>;
  close(): Promise<void>;
}

export const EXEC_EVENT_TYPES = ['exec.dispatched', 'exec.completed', 'exec.failed', 'exec.timeout', 'exec.approval_requested', 'exec.approved', 'exec.rejected'];

const NOW = 1_700_000_000_000;
let n = 0;
const newInvocation = (workspaceId = 'ws_1', approvalId: string | null = null): Invocation =>
  machine.createInvocation(
    { id: `inv_${String(++n).padStart(8, '0')}`, projectId: 'proj_a', workspaceId, toolName: 'echo', arguments: { n }, risk: 'read', timeoutMs: 1000, approvalId },
    NOW,
  );
const dispatchChange = (inv: Invocation, at = NOW): Change => {
  const t = machine.dispatch(inv, 'agent_1', at);
  if (!t) throw new Error('not dispatchable');
  return { projectId: inv.projectId, invocation: { from: inv.status, to: t.invocation }, approval: null, events: t.events };
};

export function execInvocationsStoreContract(name: string, open: () => Promise<ExecInvocationsStoreFixture>): void {
  describe(`exec invocations store: ${name}`, () => {
    const opened: ExecInvocationsStoreFixture[] = [];
    const fixture = async (): Promise<ExecInvocationsStoreFixture> => {
      const f = await open();
      opened.push(f);
      return f;
    };
    afterEach(async () => {
      for (const f of opened.splice(0)) await f.close();
    });

    it('creates an invocation with its approval and events, and reads both back', async () => {
      const { store, events } = await fixture();
      const approvalId = `appr_${++n}`;
      const inv = newInvocation('ws_1', approvalId);
      const requested = approvals.requestApproval(
        { id: approvalId, projectId: 'proj_a', invocationId: inv.id, workspaceId: 'ws_1', toolName: 'echo', risk: 'read', chain: [{ target: 'operators', timeoutMs: 60_000 }], requester: { keyId: 'key_1', userId: 'usr_1' } },
        NOW,
      );
      expect(await store.create(inv, requested.approval, requested.events, null, NOW)).toEqual({ kind: 'created' });
      expect(await store.invocation(inv.id)).toEqual(inv);
      expect(await store.approval(approvalId)).toEqual(requested.approval);
      expect(await store.invocation('inv_none')).toBeNull();
      expect(await events()).toEqual(['exec.approval_requested']);
    });

    it('replays an Idempotency-Key with the same body, conflicts with another, and frees it once expired', async () => {
      const { store } = await fixture();
      const first = newInvocation();
      const idem = { key: 'k1', bodyHash: 'body-1', expiresAt: NOW + 1000 };
      expect((await store.create(first, null, [], idem, NOW)).kind).toBe('created');
      const replay = await store.create(newInvocation(), null, [], idem, NOW + 1);
      expect(replay.kind === 'replayed' && replay.invocation.id).toBe(first.id);
      expect((await store.create(newInvocation(), null, [], { ...idem, bodyHash: 'body-2' }, NOW + 1)).kind).toBe('conflict');
      expect(await store.idempotencyKey('proj_a', 'k1', NOW + 1)).toEqual({ bodyHash: 'body-1', invocationId: first.id });
      expect(await store.idempotencyKey('proj_a', 'k1', NOW + 1000)).toBeNull();
      const later = newInvocation();
      expect((await store.create(later, null, [], { ...idem, expiresAt: NOW + 5000 }, NOW + 1000)).kind).toBe('created');
      expect(await store.dropExpiredKeys(NOW + 5000)).toBe(1);
    });

    it('commits a change only from the state it was read in, with its events once', async () => {
      const { store, events } = await fixture();
      const inv = newInvocation();
      await store.create(inv, null, [], null, NOW);
      const change = dispatchChange(inv);
      expect(await store.commit(change)).toBe(true);
      expect(await store.commit(change)).toBe(false);
      expect((await store.invocation(inv.id))?.status).toBe('dispatched');
      expect(await events()).toEqual(['exec.dispatched']);
    });

    it('claims with the send inside: a failed send or a lost race leaves the row queued', async () => {
      const { store, events } = await fixture();
      const inv = newInvocation();
      await store.create(inv, null, [], null, NOW);
      expect(await store.claim(dispatchChange(inv), () => false)).toBe('unsent');
      expect((await store.invocation(inv.id))?.status).toBe('queued');
      let sent = 0;
      expect(await store.claim(dispatchChange(inv), () => (sent += 1) > 0)).toBe('claimed');
      expect(await store.claim(dispatchChange(inv), () => (sent += 1) > 0)).toBe('taken');
      expect(sent).toBe(1);
      expect((await store.activeOfAgent('agent_1')).map((i) => i.id)).toEqual([inv.id]);
      expect(await store.statusesOf([inv.id, 'inv_none'])).toEqual([{ id: inv.id, status: 'dispatched', agentId: 'agent_1' }]);
      expect(await events()).toEqual(['exec.dispatched']);
    });

    it('pages invocations newest first, filtered by status and workspace', async () => {
      const { store } = await fixture();
      const a = newInvocation('ws_1');
      const b = newInvocation('ws_2');
      const c = newInvocation('ws_1');
      for (const inv of [a, b, c]) await store.create(inv, null, [], null, NOW);
      await store.commit(dispatchChange(c));
      const q = { limit: 2, after: null, status: null, workspaceIds: null };
      const first = await store.listInvocations('proj_a', q);
      expect([first?.items.map((i) => i.id), first?.hasMore]).toEqual([[c.id, b.id], true]);
      const second = await store.listInvocations('proj_a', { ...q, after: b.id });
      expect([second?.items.map((i) => i.id), second?.hasMore]).toEqual([[a.id], false]);
      expect((await store.listInvocations('proj_a', { ...q, status: 'queued' }))?.items.map((i) => i.id)).toEqual([b.id, a.id]);
      expect((await store.listInvocations('proj_a', { ...q, workspaceIds: ['ws_2'] }))?.items.map((i) => i.id)).toEqual([b.id]);
      expect((await store.listInvocations('proj_a', { ...q, workspaceIds: [] }))?.items).toEqual([]);
      expect(await store.listInvocations('proj_a', { ...q, after: 'inv_none' })).toBeNull();
      expect((await store.withStatus('queued', 0, 10)).map((s) => s.invocation.id)).toEqual([a.id, b.id]);
    });

    it('finds due invocations and lapsed approval stages', async () => {
      const { store } = await fixture();
      const approvalId = `appr_${++n}`;
      const inv = newInvocation('ws_1', approvalId);
      const requested = approvals.requestApproval(
        { id: approvalId, projectId: 'proj_a', invocationId: inv.id, workspaceId: 'ws_1', toolName: 'echo', risk: 'read', chain: [{ target: 'operators', timeoutMs: 500 }], requester: approvals.NO_REQUESTER },
        NOW,
      );
      await store.create(inv, requested.approval, [], null, NOW);
      const queued = newInvocation();
      await store.create(queued, null, [], null, NOW);
      expect((await store.dueApprovals(NOW + 499, 10)).length).toBe(0);
      expect((await store.dueApprovals(NOW + 500, 10)).map((a) => a.id)).toEqual([approvalId]);
      expect((await store.dueInvocations(NOW + 1000, 10)).map((i) => i.id)).toContain(queued.id);
      const pageOfApprovals = await store.listApprovals('proj_a', { limit: 10, after: null, status: 'pending', workspaceIds: null });
      expect(pageOfApprovals?.items.map((a) => a.id)).toEqual([approvalId]);
    });

    it('fails in recovery only what an instance that left the registry dispatched', async () => {
      const { store, unregister, events } = await fixture();
      const inv = newInvocation();
      await store.create(inv, null, [], null, NOW);
      await store.commit(dispatchChange(inv));
      const fail = (i: Invocation): Change | null => {
        const t = machine.fail(i, 'gateway_restarted', 'gone', NOW + 1);
        return t && { projectId: i.projectId, invocation: { from: i.status, to: t.invocation }, approval: null, events: t.events };
      };
      expect(await store.failAbandoned('dispatched', 0, 10, fail)).toEqual([]);
      await unregister();
      const batch = await store.failAbandoned('dispatched', 0, 10, fail);
      expect(batch.map((s) => s.invocation.id)).toEqual([inv.id]);
      expect((await store.invocation(inv.id))?.error?.code).toBe('gateway_restarted');
      expect(await store.failAbandoned('dispatched', 0, 10, fail)).toEqual([]);
      expect(await events()).toEqual(['exec.dispatched', 'exec.failed']);
    });
  });
}
