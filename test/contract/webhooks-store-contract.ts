/**
 * The webhooks storage port (src/core/store/webhooks-store.ts): one suite, run against SQLite and
 * PostgreSQL by webhooks-store.test.ts. Projects `proj_a` and `proj_b` exist in the store given.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxEvent, WebhooksStore } from '../../src/core/store/webhooks-store.js';
import type { DueDelivery, WebhookEndpointRecord } from '../../src/core/webhooks/delivery.js';

export interface WebhooksStoreFixture {
  readonly store: WebhooksStore;
  /** Registers an instance as live in the store's registry (its claims are kept). */
  register(instanceId: string): Promise<void>;
  /** Deletes an instance's registration, as a sibling's sweep does for a dead one. */
  unregister(instanceId: string): Promise<void>;
  close(): Promise<void>;
}

const LEASE = 60_000;
const NOW = 1_700_000_000_000;

const endpoint = (id: string, events: string[], projectId = 'proj_a', at = NOW): WebhookEndpointRecord => ({
  id,
  projectId,
  url: `https://receiver.example/${id}`,
  description: null,
  events,
  isActive: true,
  metadata: { team: 'ops' },
  createdAt: at,
  updatedAt: at,
});

let n = 0;
const event = (type: string, projectId = 'proj_a', createdAt = NOW): OutboxEvent => {
  n += 1;
  const id = `evt_${String(n).padStart(24, '0')}`;
  return { id, projectId, type, body: JSON.stringify({ id, type }), createdAt };
};

const takeAll = (candidates: DueDelivery[]): DueDelivery[] => candidates;

export function webhooksStoreContract(name: string, open: () => Promise<WebhooksStoreFixture>): void {
  describe(`webhooks store: ${name}`, () => {
    const opened: WebhooksStoreFixture[] = [];
    const fixture = async (): Promise<WebhooksStoreFixture> => {
      const f = await open();
      opened.push(f);
      return f;
    };
    afterEach(async () => {
      for (const f of opened.splice(0)) await f.close();
    });

    it('creates, pages newest first, updates and deletes endpoints, and refuses one past the cap', async () => {
      const { store } = await fixture();
      const e = store.endpoints;
      expect(await e.insertCapped(endpoint('w1', ['exec.completed']), 'whsec_1', 2)).toBe(true);
      expect(await e.insertCapped(endpoint('w2', ['exec.failed']), 'whsec_2', 2)).toBe(true);
      expect(await e.insertCapped(endpoint('w3', ['exec.failed']), 'whsec_3', 2)).toBe(false);
      expect(await e.insertCapped(endpoint('w4', ['exec.failed'], 'proj_b'), 'whsec_4', 2)).toBe(true);

      expect(await e.get('proj_a', 'w1')).toEqual(endpoint('w1', ['exec.completed']));
      expect(await e.get('proj_b', 'w1')).toBeNull();
      expect(await e.secret('proj_a', 'w2')).toBe('whsec_2');
      const first = await e.list('proj_a', 1, null);
      expect(first).toEqual({ items: [endpoint('w2', ['exec.failed'])], hasMore: true });
      expect(await e.list('proj_a', 1, 'w2')).toEqual({ items: [endpoint('w1', ['exec.completed'])], hasMore: false });
      expect(await e.list('proj_a', 1, 'nope')).toBeNull();

      const updated = await e.update('proj_a', 'w1', { events: ['exec.failed'], description: 'd', isActive: false }, NOW + 5);
      expect(updated).toEqual({ ...endpoint('w1', ['exec.failed']), description: 'd', isActive: false, updatedAt: NOW + 5 });
      expect(await e.get('proj_a', 'w1')).toEqual(updated);
      expect(await e.update('proj_a', 'nope', { isActive: true }, NOW)).toBeNull();

      expect(await e.delete('proj_a', 'w1')).toBe(true);
      expect(await e.delete('proj_a', 'w1')).toBe(false);
      expect(await e.get('proj_a', 'w1')).toBeNull();
    });

    it('fans an event out to the active subscribers of its project, once per event id however often it is appended', async () => {
      const { store } = await fixture();
      const e = store.endpoints;
      await e.insertCapped(endpoint('w1', ['exec.completed']), 's', 20);
      await e.insertCapped(endpoint('w2', ['exec.completed', 'exec.failed']), 's', 20);
      await e.insertCapped(endpoint('w3', ['exec.failed']), 's', 20);
      await e.insertCapped(endpoint('w4', ['exec.completed']), 's', 20);
      await e.update('proj_a', 'w4', { isActive: false }, NOW);
      await e.insertCapped(endpoint('w5', ['exec.completed'], 'proj_b'), 's', 20);

      const completed = event('exec.completed');
      expect(await store.appendEvents([completed, event('exec.failed'), event('agent.created')])).toBe(4);
      // A relay appending the same event again (it crashed before deleting its copy) queues nothing.
      expect(await store.appendEvents([completed])).toBe(0);
      const count = async (id: string): Promise<number> => (await e.deliveries(id, 100, null))?.items.length ?? -1;
      expect([await count('w1'), await count('w2'), await count('w3'), await count('w4'), await count('w5')]).toEqual([1, 2, 1, 0, 0]);
      const [delivery] = (await e.deliveries('w1', 10, null))?.items ?? [];
      expect(delivery).toEqual(expect.objectContaining({ webhookId: 'w1', eventType: 'exec.completed', state: 'pending', attemptCount: 0, httpStatus: null, createdAt: NOW }));
      expect(delivery?.id).toMatch(/^del_[0-9a-f]{24}$/);
    });

    it('keeps no event that no endpoint subscribes to, alone or in a batch, and fans out only the new events of a batch appended again', async () => {
      const { store } = await fixture();
      await store.endpoints.insertCapped(endpoint('w1', ['exec.completed']), 's', 20);
      const first = event('exec.completed');
      expect(await store.appendEvents([event('agent.created')])).toBe(0);
      expect(await store.appendEvents([first, event('agent.created')])).toBe(1);
      expect(await store.appendEvents([first, event('exec.completed')])).toBe(1);
      // Past a zero retention only unneeded events could go, and there are none: both kept ones wait for their deliveries.
      expect(await store.prune(NOW + 1, 0)).toEqual({ deliveries: 0, events: 0 });
      expect((await store.endpoints.deliveries('w1', 10, null))?.items).toHaveLength(2);
    });

    it('hands each due delivery to one claimant, with the body and the secret, and records only the claimant\'s outcome', async () => {
      const { store, register } = await fixture();
      await register('inst_a');
      await register('inst_b');
      await store.endpoints.insertCapped(endpoint('w1', ['exec.completed']), 'whsec_1', 20);
      const events = Array.from({ length: 30 }, () => event('exec.completed'));
      expect(await store.appendEvents(events)).toBe(30);
      const a = store.deliveryQueue({ instanceId: 'inst_a', leaseMs: LEASE });
      const b = store.deliveryQueue({ instanceId: 'inst_b', leaseMs: LEASE });

      expect((await a.claimDue(NOW - 1, 100, [], takeAll)).claimed).toEqual([]);
      const [fromA, fromB] = await Promise.all([a.claimDue(NOW, 20, [], takeAll), b.claimDue(NOW, 20, [], takeAll)]);
      const seqs = [...fromA.claimed, ...fromB.claimed].map((d) => d.seq);
      expect(new Set(seqs).size).toBe(seqs.length);
      const rest = await b.claimDueFor('w1', NOW, 100);
      expect(new Set([...seqs, ...rest.map((d) => d.seq)]).size).toBe(30);
      expect(await a.claimDue(NOW, 100, [], takeAll)).toEqual({ claimed: [], seen: 0 });

      const one = fromA.claimed[0] ?? rest[0];
      if (!one) throw new Error('nothing claimed');
      expect(one).toEqual(expect.objectContaining({ webhookId: 'w1', url: 'https://receiver.example/w1', secret: 'whsec_1', attemptCount: 0 }));
      expect(events.map((ev) => ev.body)).toContain(one.body);

      const outcome = { ok: true, httpStatus: 200, responseBody: 'ok', errorMessage: null };
      const result = { seq: one.seq, kind: 'attempted', state: 'delivered', attemptCount: 1, nextAttemptAt: null, outcome, at: NOW + 1 } as const;
      const holder = fromA.claimed.some((d) => d.seq === one.seq) ? a : b;
      const other = holder === a ? b : a;
      await other.recordResults([result], NOW + 1);
      let listed = (await store.endpoints.deliveries('w1', 100, null))?.items.find((d) => d.id === one.id);
      expect(listed?.state).toBe('sending');
      await holder.recordResults([result], NOW + 1);
      listed = (await store.endpoints.deliveries('w1', 100, null))?.items.find((d) => d.id === one.id);
      expect(listed).toEqual(expect.objectContaining({ state: 'delivered', attemptCount: 1, httpStatus: 200, responseBody: 'ok' }));

      expect(await store.endpoints.redeliver('w1', one.id, NOW + 2)).toBe(true);
      expect(await store.endpoints.redeliver('w1', 'del_nope', NOW + 2)).toBe(false);
      expect((await a.claimDue(NOW + 2, 10, [], takeAll)).claimed.map((d) => d.id)).toEqual([one.id]);
    });

    it('skips endpoints asked to be skipped, and gives a claim back unattempted', async () => {
      const { store, register } = await fixture();
      await register('inst_a');
      await store.endpoints.insertCapped(endpoint('w1', ['exec.completed']), 's', 20);
      await store.endpoints.insertCapped(endpoint('w2', ['exec.completed']), 's', 20);
      await store.appendEvents([event('exec.completed')]);
      const a = store.deliveryQueue({ instanceId: 'inst_a', leaseMs: LEASE });
      const { claimed } = await a.claimDue(NOW, 10, ['w1'], takeAll);
      expect(claimed.map((d) => d.webhookId)).toEqual(['w2']);
      await a.recordResults(claimed.map((d) => ({ seq: d.seq, kind: 'released' as const })), NOW);
      expect((await a.claimDue(NOW, 10, [], takeAll)).claimed.map((d) => d.webhookId).sort()).toEqual(['w1', 'w2']);
    });

    it('gives back the claims of an instance no longer registered, and keeps a live one\'s', async () => {
      const { store, register, unregister } = await fixture();
      await register('inst_live');
      await register('inst_dead');
      await store.endpoints.insertCapped(endpoint('w1', ['exec.completed']), 's', 20);
      await store.appendEvents([event('exec.completed'), event('exec.completed')]);
      const live = store.deliveryQueue({ instanceId: 'inst_live', leaseMs: LEASE });
      const dead = store.deliveryQueue({ instanceId: 'inst_dead', leaseMs: LEASE });
      expect((await live.claimDue(NOW, 1, [], takeAll)).claimed).toHaveLength(1);
      expect((await dead.claimDue(NOW, 1, [], takeAll)).claimed).toHaveLength(1);
      expect(await live.releaseAbandoned()).toBe(0);
      expect(await live.renewClaims()).toBe(1);
      await unregister('inst_dead');
      expect(await live.releaseAbandoned()).toBe(1);
      expect((await live.claimDue(NOW, 10, [], takeAll)).claimed).toHaveLength(1);
    });

    it('prunes finished deliveries and unneeded events past the retention, never pending ones', async () => {
      const { store, register } = await fixture();
      await register('inst_a');
      await store.endpoints.insertCapped(endpoint('w1', ['exec.completed']), 's', 20);
      await store.appendEvents([event('exec.completed', 'proj_a', NOW), event('exec.completed', 'proj_a', NOW)]);
      const a = store.deliveryQueue({ instanceId: 'inst_a', leaseMs: LEASE });
      const [done] = (await a.claimDue(NOW, 1, [], takeAll)).claimed;
      if (!done) throw new Error('nothing claimed');
      const outcome = { ok: true, httpStatus: 200, responseBody: null, errorMessage: null };
      await a.recordResults([{ seq: done.seq, kind: 'attempted', state: 'delivered', attemptCount: 1, nextAttemptAt: null, outcome, at: NOW }], NOW);
      expect(await store.prune(NOW + 1000, 5000)).toEqual({ deliveries: 0, events: 0 });
      expect(await store.prune(NOW + 10_000, 5000)).toEqual({ deliveries: 1, events: 1 });
      expect((await store.endpoints.deliveries('w1', 10, null))?.items.map((d) => d.state)).toEqual(['pending']);
    });

    it('deletes an endpoint with its deliveries', async () => {
      const { store } = await fixture();
      await store.endpoints.insertCapped(endpoint('w1', ['exec.completed']), 's', 20);
      await store.appendEvents([event('exec.completed')]);
      expect(await store.endpoints.delete('proj_a', 'w1')).toBe(true);
      expect(await store.endpoints.deliveries('w1', 10, null)).toEqual({ items: [], hasMore: false });
      await store.endpoints.insertCapped(endpoint('w2', ['exec.completed']), 's', 20);
      expect(await store.appendEvents([event('exec.completed')])).toBe(1);
    });
  });
}
