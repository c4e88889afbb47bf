/**
 * The exec agents storage port (src/core/store/exec-agents-store.ts): one suite, run against SQLite and
 * PostgreSQL by exec-agents-store.test.ts. Projects `proj_a` and `proj_b` exist and subscribe to the
 * agent events; `events()` lists the event types written, oldest first.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentRecord, JoinKeyRecord } from '../../src/core/exec/agent-records.js';
import type { ExecAgentsStore, StoredEvent } from '../../src/core/store/exec-agents-store.js';

export interface ExecAgentsStoreFixture {
  readonly store: ExecAgentsStore;
  events(): Promise<string[]>;
  close(): Promise<void>;
}

export const AGENT_EVENT_TYPES = ['join_key.created', 'join_key.revoked', 'agent.created', 'agent.enrolled', 'agent.updated', 'agent.deleted', 'agent.key_rotated'];

const NOW = 1_700_000_000_000;
let n = 0;
const joinKey = (projectId = 'proj_a'): JoinKeyRecord => ({ id: `jk_${++n}`, projectId, name: `key ${n}`, createdAt: NOW + n, revokedAt: null });
const agent = (name: string, projectId = 'proj_a'): AgentRecord => ({
  id: `agent_${++n}`,
  projectId,
  registrationName: name,
  description: null,
  workspaceIds: ['ws_1'],
  joinKeyId: 'jk_1',
  manifest: { tools: [{ name: 'echo', description: 'Echo', input_schema: { type: 'object' }, risk: 'read', mcp_visible: true }] },
  manifestHash: 'hash',
  createdAt: NOW,
  enrolledAt: NOW,
  lastSeenAt: NOW,
  updatedAt: NOW,
  deletedAt: null,
});
const ev = (type: StoredEvent['type']): StoredEvent => ({ type, data: { n } });

export function execAgentsStoreContract(name: string, open: () => Promise<ExecAgentsStoreFixture>): void {
  describe(`exec agents store: ${name}`, () => {
    const opened: ExecAgentsStoreFixture[] = [];
    const fixture = async (): Promise<ExecAgentsStoreFixture> => {
      const f = await open();
      opened.push(f);
      return f;
    };
    afterEach(async () => {
      for (const f of opened.splice(0)) await f.close();
    });

    it('stores join keys with their event, lists them newest first and finds them by id and hash', async () => {
      const { store, events } = await fixture();
      const a = joinKey();
      const b = joinKey();
      await store.insertJoinKey(a, 'hash-a', [ev('join_key.created')]);
      await store.insertJoinKey(b, 'hash-b', [ev('join_key.created')]);
      expect((await store.listJoinKeys('proj_a')).map((k) => k.id)).toEqual([b.id, a.id]);
      expect(await store.findJoinKey('proj_a', a.id)).toEqual(a);
      expect(await store.findJoinKey('proj_b', a.id)).toBeNull();
      expect((await store.findJoinKeyByHash('hash-b'))?.id).toBe(b.id);
      expect(await store.findJoinKeyByHash('nope')).toBeNull();
      expect(await events()).toEqual(['join_key.created', 'join_key.created']);
    });

    it('revokes a join key once, and emits only the first time', async () => {
      const { store, events } = await fixture();
      const k = joinKey();
      await store.insertJoinKey(k, 'hash-r', []);
      expect(await store.revokeJoinKey('proj_a', k.id, NOW + 5, [ev('join_key.revoked')])).toBe(true);
      expect(await store.revokeJoinKey('proj_a', k.id, NOW + 6, [ev('join_key.revoked')])).toBe(false);
      expect((await store.findJoinKey('proj_a', k.id))?.revokedAt).toBe(NOW + 5);
      expect(await events()).toEqual(['join_key.revoked']);
    });

    it('refuses a second live agent with the same name, without its events', async () => {
      const { store, events } = await fixture();
      const first = agent('builder');
      expect(await store.insertAgent(first, 'ak-1', [ev('agent.created'), ev('agent.enrolled')])).toBe(true);
      expect(await store.insertAgent(agent('builder'), 'ak-2', [ev('agent.created')])).toBe(false);
      expect(await store.insertAgent(agent('builder', 'proj_b'), 'ak-3', [])).toBe(true);
      expect(await store.findAgent('proj_a', first.id)).toEqual(first);
      expect((await store.findAgentByHash('ak-1'))?.id).toBe(first.id);
      expect((await store.findLiveAgentByName('proj_a', 'builder'))?.id).toBe(first.id);
      expect(await events()).toEqual(['agent.created', 'agent.enrolled']);
    });

    it('re-enrolls an agent under a new name unless a live agent holds it', async () => {
      const { store } = await fixture();
      const a = agent('alpha');
      const b = agent('beta');
      await store.insertAgent(a, 'ak-a', []);
      await store.insertAgent(b, 'ak-b', []);
      expect(await store.enrolled({ ...a, registrationName: 'beta', enrolledAt: NOW + 9 }, [ev('agent.enrolled')])).toBe(false);
      expect(await store.enrolled({ ...a, registrationName: 'gamma', manifestHash: 'h2', enrolledAt: NOW + 9 }, [ev('agent.enrolled')])).toBe(true);
      const stored = await store.findAgent('proj_a', a.id);
      expect([stored?.registrationName, stored?.manifestHash, stored?.enrolledAt]).toEqual(['gamma', 'h2', NOW + 9]);
    });

    it('updates, rotates the key of and soft-deletes an agent; a deleted name is free again', async () => {
      const { store, events } = await fixture();
      const a = agent('worker');
      await store.insertAgent(a, 'ak-w', []);
      await store.updateAgent({ ...a, description: 'd', workspaceIds: ['ws_2'], updatedAt: NOW + 1 }, [ev('agent.updated')]);
      await store.setAgentKeyHash(a.id, 'ak-w2', NOW + 2, [ev('agent.key_rotated')]);
      expect(await store.findAgentByHash('ak-w')).toBeNull();
      expect((await store.findAgentByHash('ak-w2'))?.workspaceIds).toEqual(['ws_2']);
      expect(await store.softDeleteAgent(a.id, NOW + 3, [ev('agent.deleted')])).toBe(true);
      expect(await store.softDeleteAgent(a.id, NOW + 4, [ev('agent.deleted')])).toBe(false);
      expect(await store.listAgents('proj_a')).toEqual([]);
      expect((await store.findAgent('proj_a', a.id))?.deletedAt).toBe(NOW + 3);
      expect(await store.insertAgent(agent('worker'), 'ak-new', [])).toBe(true);
      expect(await events()).toEqual(['agent.updated', 'agent.key_rotated', 'agent.deleted']);
    });

    it('never moves last_seen_at back', async () => {
      const { store } = await fixture();
      const a = agent('clock');
      await store.insertAgent(a, 'ak-c', []);
      await store.lastSeen(a.id, NOW + 100);
      await store.lastSeen(a.id, NOW + 50);
      expect((await store.findAgent('proj_a', a.id))?.lastSeenAt).toBe(NOW + 100);
    });
  });
}
