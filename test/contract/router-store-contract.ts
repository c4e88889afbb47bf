/**
 * What every implementation of the router's storage port (src/core/store/router-store.ts) must do, run
 * against the embedded SQLite store and PostgreSQL by router-store.test.ts. Every factory call gives an
 * empty store whose catalog knows PROJECT_A and PROJECT_B.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RoutingRule } from '../../src/core/routing/types.js';
import type { RouterStore, StoredDecision } from '../../src/core/store/router-store.js';

export interface RouterStoreUnderTest {
  readonly store: RouterStore;
  /** The catalog's view of a workspace's routing fields (PROJECT_A's WORKSPACE_1 and WORKSPACE_2 exist). */
  routing(workspaceId: string): Promise<WorkspaceRouting>;
  close(): Promise<void>;
}

export interface WorkspaceRouting {
  readonly routingMode: string | null;
  readonly routingModeSetAt: number | null;
  readonly pinnedEndpointId: string | null;
  readonly projectDefault: string | null;
  readonly projectDefaultSetAt: number | null;
}

export const WORKSPACE_1 = 'ws_c0ffee01';
export const WORKSPACE_2 = 'ws_c0ffee02';

export const PROJECT_A = 'proj_contract_a';
export const PROJECT_B = 'proj_contract_b';
const T0 = 1_700_000_000_000;

const rule = (id: string, endpointId: string): RoutingRule =>
  ({ id, name: `rule ${id}`, enabled: true, priority: 1, conditions: { query_contains: ['integral'] }, action: { endpoint_id: endpointId } }) as unknown as RoutingRule;

const decision = (requestId: string, createdAt: number, over: Partial<StoredDecision> = {}): StoredDecision => ({
  requestId,
  projectId: PROJECT_A,
  workspaceId: 'ws_1',
  createdAt,
  routeReason: 'similarity',
  sealedPreview: `sealed:${requestId}`,
  detail: { endpoint_slug: 'math', candidates: [{ slug: 'math', similarity: 0.5, dropped_by: null }], rule_id: null },
  ...over,
});

export function routerStoreContract(name: string, make: () => Promise<RouterStoreUnderTest>): void {
  describe(`router store contract: ${name}`, () => {
    let under: RouterStoreUnderTest;
    let store: RouterStore;
    beforeEach(async () => {
      under = await make();
      store = under.store;
    });
    afterEach(async () => {
      await under.close();
    });

    it('keeps each project its settings and rules, in stored order, replaced whole on save', async () => {
      expect(await store.routerStates()).toEqual(new Map());
      const rules = [rule('rule_2', 'e2'), rule('rule_1', 'e1')];
      await store.saveRouterState(PROJECT_A, { settings: { semantic_router_enabled: true, semantic_router_similarity_floor: 0.4 }, rules }, T0);
      await store.saveRouterState(PROJECT_B, { settings: {}, rules: [] }, T0);
      await store.saveRouterState(PROJECT_A, { settings: { semantic_router_enabled: false }, rules }, T0 + 1);
      const states = await store.routerStates();
      expect(states.get(PROJECT_A)).toEqual({ settings: { semantic_router_enabled: false }, rules });
      expect(states.get(PROJECT_A)?.rules.map((r) => r.id)).toEqual(['rule_2', 'rule_1']);
      expect(states.get(PROJECT_B)).toEqual({ settings: {}, rules: [] });
    });

    it('changes a project\'s state from the stored one; a refused change writes nothing', async () => {
      const first = await store.updateRouterState(PROJECT_A, (current) => ({ ...current, rules: [...current.rules, rule('rule_1', 'e1')] }), T0);
      expect(first).toEqual({ settings: {}, rules: [rule('rule_1', 'e1')] });
      await expect(
        store.updateRouterState(PROJECT_A, () => {
          throw new Error('refused');
        }, T0 + 1),
      ).rejects.toThrow('refused');
      await store.updateRouterState(PROJECT_A, (current) => ({ ...current, settings: { semantic_router_enabled: true } }), T0 + 2);
      expect((await store.routerStates()).get(PROJECT_A)).toEqual({ settings: { semantic_router_enabled: true }, rules: [rule('rule_1', 'e1')] });
    });

    it('loses no change when many are made at the same moment (each sees the one before)', async () => {
      const ids = Array.from({ length: 20 }, (_, i) => `rule_${i}`);
      await Promise.all(ids.map((id, i) => store.updateRouterState(PROJECT_B, (current) => ({ ...current, rules: [...current.rules, rule(id, 'e1')] }), T0 + i)));
      expect((await store.routerStates()).get(PROJECT_B)?.rules.map((r) => r.id).sort()).toEqual([...ids].sort());
    });

    it('creates an SLO, then replaces its objectives keeping its creation time', async () => {
      const first = await store.putSlo(PROJECT_A, 'e1', { ttftMs: 250, tpotMs: null }, T0);
      expect(first).toEqual({ projectId: PROJECT_A, endpointId: 'e1', ttftMs: 250, tpotMs: null, createdAt: T0, updatedAt: T0 });
      const second = await store.putSlo(PROJECT_A, 'e1', { ttftMs: null, tpotMs: 12.5 }, T0 + 5);
      expect(second).toEqual({ projectId: PROJECT_A, endpointId: 'e1', ttftMs: null, tpotMs: 12.5, createdAt: T0, updatedAt: T0 + 5 });
      await store.putSlo(PROJECT_A, 'e0', { ttftMs: 100, tpotMs: 10 }, T0 + 1);
      await store.putSlo(PROJECT_B, 'e9', { ttftMs: 1, tpotMs: 1 }, T0 + 2);
      expect((await store.slos(PROJECT_A)).map((s) => s.endpointId)).toEqual(['e1', 'e0']);
      expect((await store.slos()).map((s) => `${s.projectId}/${s.endpointId}`)).toEqual([`${PROJECT_A}/e1`, `${PROJECT_A}/e0`, `${PROJECT_B}/e9`]);
    });

    it('creates an alias once, updates and deletes only an existing one', async () => {
      expect(await store.createAlias(PROJECT_A, 'fast', 'model-a', T0)).toBe(true);
      expect(await store.createAlias(PROJECT_A, 'fast', 'model-b', T0 + 1)).toBe(false);
      expect(await store.createAlias(PROJECT_B, 'fast', 'model-b', T0 + 2)).toBe(true);
      expect(await store.updateAlias(PROJECT_A, 'fast', 'model-c', T0 + 3)).toBe(true);
      expect(await store.updateAlias(PROJECT_A, 'missing', 'model-c', T0 + 3)).toBe(false);
      expect(await store.aliases(PROJECT_A)).toEqual([{ projectId: PROJECT_A, alias: 'fast', target: 'model-c', createdAt: T0, updatedAt: T0 + 3 }]);
      expect((await store.aliases()).map((a) => a.projectId)).toEqual([PROJECT_A, PROJECT_B]);
      expect(await store.deleteAlias(PROJECT_A, 'fast')).toBe(true);
      expect(await store.deleteAlias(PROJECT_A, 'fast')).toBe(false);
      expect(await store.aliases(PROJECT_A)).toEqual([]);
    });

    it("changes a workspace's routing fields, stamping each, and moves or drops the project default", async () => {
      await store.applyWorkspaceChange(PROJECT_A, WORKSPACE_1, { routingMode: 'concrete', pinnedEndpointId: 'e1', isDefault: true }, T0);
      expect(await under.routing(WORKSPACE_1)).toEqual({ routingMode: 'concrete', routingModeSetAt: T0, pinnedEndpointId: 'e1', projectDefault: WORKSPACE_1, projectDefaultSetAt: T0 });
      // Dropping the default of a workspace that is not the default changes nothing.
      await store.applyWorkspaceChange(PROJECT_A, WORKSPACE_2, { isDefault: false }, T0 + 1);
      expect((await under.routing(WORKSPACE_1)).projectDefault).toBe(WORKSPACE_1);
      await store.applyWorkspaceChange(PROJECT_A, WORKSPACE_1, { routingMode: null, pinnedEndpointId: null, isDefault: false }, T0 + 2);
      expect(await under.routing(WORKSPACE_1)).toEqual({ routingMode: null, routingModeSetAt: T0 + 2, pinnedEndpointId: null, projectDefault: null, projectDefaultSetAt: T0 + 2 });
      expect((await under.routing(WORKSPACE_2)).routingModeSetAt).toBeNull();
    });

    it('lists decisions newest first, later insertion first within a millisecond, within the window and the limit', async () => {
      await store.insertDecisions([decision('req_old', T0 - 10), decision('req_1', T0), decision('req_2', T0), decision('req_3', T0 + 1)]);
      await store.insertDecisions([decision('req_b', T0 + 2, { projectId: PROJECT_B })]);
      await store.insertDecisions([]);
      const rows = await store.decisions(PROJECT_A, T0, 10);
      expect(rows.map((r) => r.requestId)).toEqual(['req_3', 'req_2', 'req_1']);
      expect(rows[0]).toEqual(decision('req_3', T0 + 1));
      expect((await store.decisions(PROJECT_A, 0, 2)).map((r) => r.requestId)).toEqual(['req_3', 'req_2']);
    });

    it("finds one request's decision within a time window of its project, and nothing outside it", async () => {
      await store.insertDecisions([decision('req_1', T0), decision('req_2', T0 + 5), decision('req_2', T0 + 5, { projectId: PROJECT_B, routeReason: 'rule' })]);
      expect(await store.decisionOf(PROJECT_A, 'req_2', T0, T0 + 10)).toEqual(decision('req_2', T0 + 5));
      expect((await store.decisionOf(PROJECT_B, 'req_2', T0, T0 + 10))?.routeReason).toBe('rule');
      expect(await store.decisionOf(PROJECT_A, 'req_2', T0 + 6, T0 + 10)).toBeNull();
      expect(await store.decisionOf(PROJECT_A, 'req_9', T0, T0 + 10)).toBeNull();
    });

    it('counts decisions by reason and prunes those older than a time', async () => {
      await store.insertDecisions([
        decision('r1', T0, { routeReason: 'rule' }),
        decision('r2', T0 + 1, { routeReason: 'similarity' }),
        decision('r3', T0 + 2, { routeReason: 'similarity' }),
        decision('r0', T0 - 1, { routeReason: 'fallback' }),
      ]);
      expect(await store.decisionCounts(PROJECT_A, T0)).toEqual(new Map([['rule', 1], ['similarity', 2]]));
      await store.pruneDecisions(T0 + 1);
      expect((await store.decisions(PROJECT_A, 0, 10)).map((r) => r.requestId)).toEqual(['r3', 'r2']);
    });

    it('stores a batch larger than one statement may carry in parameters', async () => {
      const rows = Array.from({ length: 12_000 }, (_, i) => decision(`req_${i}`, T0 + i, { sealedPreview: '' }));
      await store.insertDecisions(rows);
      const counts = await store.decisionCounts(PROJECT_A, 0);
      expect(counts.get('similarity')).toBe(12_000);
    });
  });
}
