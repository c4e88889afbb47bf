/**
 * attachBus (src/coordination/bus-wiring.ts) between two replicas joined by an in-memory bus: a write on
 * one refreshes the other's caches without echoing back, budget spend counts on both with one alert, API
 * caps and affinity follow, and the embedded localBus wraps nothing.
 */
import { describe, expect, it } from 'vitest';
import { localBus, type Bus, type BusMessage } from '../../../src/core/coordination/bus.js';
import { Budgets, type ApiCapsEntry, type BudgetThresholdEvent } from '../../../src/core/limits/budgets.js';
import { createAffinityMap } from '../../../src/core/routing/affinity-map.js';
import type { Catalog } from '../../../src/store/catalog.js';
import type { ProjectRouterState } from '../../../src/core/store/router-store.js';
import type { RouterSettingsCache } from '../../../src/router/router-state.js';
import { attachBus } from '../../../src/coordination/bus-wiring.js';

const T0 = 1_700_000_000_000;

/**
 * Buses that deliver to every other bus of the group, synchronously, never to the publisher. `away` makes
 * a member miss what is published meanwhile, as a Redis subscriber does while reconnecting; `back` ends it
 * and tells its resubscribed listeners.
 */
function busGroup(): () => Bus & { sent: BusMessage[]; away(): void; back(): void } {
  const members: { listeners: Set<(m: BusMessage) => void>; away: boolean }[] = [];
  return () => {
    const me = { listeners: new Set<(m: BusMessage) => void>(), away: false };
    const resubscribed = new Set<() => void>();
    members.push(me);
    const sent: BusMessage[] = [];
    return {
      sent,
      publish(message) {
        sent.push(message);
        for (const other of members) if (other !== me && !other.away) for (const l of other.listeners) l(message);
      },
      subscribe(listener) {
        me.listeners.add(listener);
        return () => void me.listeners.delete(listener);
      },
      onResubscribed(listener) {
        resubscribed.add(listener);
        return () => void resubscribed.delete(listener);
      },
      away: () => void (me.away = true),
      back() {
        me.away = false;
        for (const l of resubscribed) l();
      },
      close: async () => undefined,
    };
  };
}

/** What both replicas share: the store (router rows, API caps). */
interface Store {
  routerRows: Map<string, ProjectRouterState>;
  caps: ApiCapsEntry[];
}

function replica(bus: Bus, store: Store) {
  let reloads = 0;
  const catalog = { reload: () => void (reloads += 1) } as unknown as Catalog;
  let cache = new Map(store.routerRows);
  const routerSettings: RouterSettingsCache = {
    get: (projectId) => cache.get(projectId) ?? { settings: {}, rules: [] },
    async update(projectId, change) {
      const state = change(store.routerRows.get(projectId) ?? { settings: {}, rules: [] });
      store.routerRows.set(projectId, state);
      cache.set(projectId, state);
      return state;
    },
    reload: async () => void (cache = new Map(store.routerRows)),
  };
  const affinity = createAffinityMap({ maxEntries: 10, ttlMs: 60_000 });
  const budgets = new Budgets();
  const alerts: BudgetThresholdEvent[] = [];
  budgets.onBudgetThreshold((e) => alerts.push(e));
  budgets.setConfigCaps('endpoint', 'proj_a', 'ep_1', { hourlyTokens: 100, dailyTokens: null, hardCapTokens: null });
  let resyncs = 0;
  const wiring = attachBus(bus, { catalog, routerSettings, affinity, budgets, storedBudgetCaps: () => store.caps, resyncBudgetSpend: () => void (resyncs += 1) });
  return { catalog, reloads: () => reloads, resyncs: () => resyncs, routerSettings, affinity, budgets, alerts, wiring };
}

function pair() {
  const store: Store = { routerRows: new Map(), caps: [] };
  const join = busGroup();
  const busA = join();
  const busB = join();
  return { a: replica(busA, store), b: replica(busB, store), busA, busB, store };
}

describe('attachBus between two replicas', () => {
  it('reloads the other replica when a write reloads the catalog, and the other does not publish it back', () => {
    const { a, b, busB } = pair();
    a.catalog.reload();
    expect(a.reloads()).toBe(1);
    expect(b.reloads()).toBe(1);
    expect(busB.sent).toEqual([]);
  });

  it('routes on B by a rule saved on A', async () => {
    const { a, b } = pair();
    const state: ProjectRouterState = { settings: { semantic_router_enabled: true }, rules: [] };
    await a.routerSettings.update('proj_a', () => state, T0);
    expect(b.routerSettings.get('proj_a')).toEqual(state);
    // A router invalidation leaves the catalog alone.
    expect(b.reloads()).toBe(0);
  });

  it('counts a budget charge made on A on B too, with the threshold alert sent by A only', () => {
    const { a, b, busB } = pair();
    a.budgets.charge('proj_a', 'ep_1', null, 85, T0);
    expect(a.alerts).toHaveLength(1);
    expect(b.alerts).toHaveLength(0);
    expect(b.budgets.check('proj_a', 'ep_1', null, T0)).toEqual({ warning: 'endpoint:hourly', exhausted: null });
    // B's own next charge does not send the alert A already sent for this hour.
    b.budgets.charge('proj_a', 'ep_1', null, 20, T0 + 1);
    expect(b.alerts).toHaveLength(0);
    expect(busB.sent).toEqual([{ kind: 'budget_charge', projectId: 'proj_a', endpointId: 'ep_1', workspaceId: null, tokens: 20, costNanos: 0, at: T0 + 1 }]);
    expect(a.budgets.check('proj_a', 'ep_1', null, T0 + 2)?.exhausted).toMatchObject({ level: 'endpoint', window: 'hourly', cap: 100, spent: 105 });
  });

  it('applies an API budget cap set on A on B, and its removal', () => {
    const { a, b, store } = pair();
    const caps = { hourlyTokens: 10, dailyTokens: null, hardCapTokens: null };
    store.caps = [{ level: 'workspace', projectId: 'proj_a', targetId: 'ws_1', caps }];
    a.budgets.setApiCaps('workspace', 'proj_a', 'ws_1', caps);
    expect(b.budgets.describe('workspace', 'proj_a', 'ws_1', T0)).toMatchObject({ caps, source: 'api' });
    store.caps = [];
    a.budgets.setApiCaps('workspace', 'proj_a', 'ws_1', undefined);
    expect(b.budgets.describe('workspace', 'proj_a', 'ws_1', T0)).toMatchObject({ caps: null, source: null });
  });

  it("keeps a conversation on the endpoint A routed it to when B serves its next turn", () => {
    const { a, b, busB } = pair();
    a.affinity.set('proj_a/*/conv_1', 'ep_2', T0);
    expect(b.affinity.get('proj_a/*/conv_1', T0 + 1)).toBe('ep_2');
    expect(busB.sent).toEqual([]);
  });

  it('reloads the caches and budget spend on B once its bus is back from losing A\'s messages', async () => {
    const { a, b, busB } = pair();
    busB.away();
    a.budgets.charge('proj_a', 'ep_1', null, 85, T0);
    const state: ProjectRouterState = { settings: { semantic_router_enabled: true }, rules: [] };
    await a.routerSettings.update('proj_a', () => state, T0);
    // Lost: B knows neither.
    expect(b.budgets.describe('endpoint', 'proj_a', 'ep_1', T0).spend.hourly).toBe(0);
    expect(b.routerSettings.get('proj_a')).toEqual({ settings: {}, rules: [] });
    expect([b.reloads(), b.resyncs()]).toEqual([0, 0]);
    busB.back();
    await Promise.resolve();
    expect(b.routerSettings.get('proj_a')).toEqual(state);
    expect([b.reloads(), b.resyncs()]).toEqual([1, 1]);
    // Reloading publishes nothing, and A, which lost nothing, reloads nothing.
    expect(busB.sent).toEqual([]);
    expect([a.reloads(), a.resyncs()]).toEqual([0, 0]);
  });

  it('stops publishing and listening once detached', () => {
    const { a, b, busA } = pair();
    a.wiring.detach();
    a.catalog.reload();
    expect(busA.sent).toEqual([]);
    b.catalog.reload();
    expect(a.reloads()).toBe(1);
  });

  it('wraps nothing on the embedded local bus', () => {
    const store: Store = { routerRows: new Map(), caps: [] };
    const reload = (): void => undefined;
    const catalog = { reload } as unknown as Catalog;
    const affinity = createAffinityMap({ maxEntries: 1, ttlMs: 1 });
    const set = affinity.set;
    attachBus(localBus, { catalog, routerSettings: replica(localBus, store).routerSettings, affinity, budgets: new Budgets(), storedBudgetCaps: () => [], resyncBudgetSpend: () => undefined });
    expect(catalog.reload).toBe(reload);
    expect(affinity.set).toBe(set);
  });
});
