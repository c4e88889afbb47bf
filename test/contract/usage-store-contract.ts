/**
 * What every usage store (core/store/usage-store.ts) must do, run against SQLite and PostgreSQL: journal
 * segments stored once, the usage API's totals (groups, range and project bounds, pages and cursors, a
 * null group last, exact cost sums), the budget caps, and the spend rebuilt from the hourly rollup.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LedgerRow, RequestsQuery, UsageQuery, UsageStore } from '../../src/core/store/usage-store.js';
import { DAY_MS } from '../../src/core/store/usage-store.js';

export interface UsageStoreUnderTest {
  readonly store: UsageStore;
  /** Makes the project exist where the backend requires it (SQLite's budgets reference projects). */
  addProject(projectId: string): Promise<void>;
  close(): Promise<void>;
}

const D0 = 20_000 * DAY_MS;
const HOUR_MS = 3_600_000;

let seq = 0;
function row(over: Partial<LedgerRow> = {}): LedgerRow {
  seq += 1;
  return {
    requestId: `req_${seq}`, projectId: 'proj_a', workspaceId: 'ws_01', endpointId: 'ep_1', keyId: 'key_1', route: 'chat',
    promptTokens: 10, completionTokens: 20, cachedTokens: 0, reasoningTokens: null, serviceTier: 'default', tierMultiplier: 1,
    status: 'completed', usageSource: 'upstream', latencyMs: 1.5, createdAt: D0, model: 'model-1', costNanos: 1000,
    ...over,
  };
}

const query = (q: Partial<UsageQuery>): UsageQuery => ({ projectId: 'proj_a', start: D0, end: D0 + 10 * DAY_MS, groupBy: 'day', limit: null, after: null, ...q });

export function usageStoreContract(name: string, make: () => Promise<UsageStoreUnderTest>): void {
  describe(`usage store contract: ${name}`, () => {
    let under: UsageStoreUnderTest;
    let store: UsageStore;
    beforeEach(async () => {
      under = await make();
      store = under.store;
    });
    afterEach(async () => {
      await under.close();
    });

    it('stores a journal segment once, however often it is stored', async () => {
      const rows = [row(), row({ promptTokens: 5 })];
      expect(await store.storeSegment('seg-inst_ab-1-0.jsonl', rows)).toBe(2);
      expect(await store.storeSegment('seg-inst_ab-1-0.jsonl', rows)).toBe(0);
      const page = await store.page(query({}));
      expect(page.items).toHaveLength(1);
      expect(page.items[0]).toMatchObject({ group: D0, requests: 2, promptTokens: 15, completionTokens: 40 });
    });

    it('stores a segment again only after its marker was forgotten', async () => {
      await store.storeSegment('seg-inst_ab-1-1.jsonl', [row()]);
      await store.forgetSegments(['seg-inst_ab-1-1.jsonl']);
      expect(await store.storeSegment('seg-inst_ab-1-1.jsonl', [row()])).toBe(1);
      expect(await store.storeSegment('seg-inst_ab-1-1.jsonl', [row()])).toBe(0);
    });

    it('sums each group over the range of one project only', async () => {
      await store.storeSegment('s1', [
        row({ createdAt: D0 + 5, reasoningTokens: 3 }),
        row({ createdAt: D0 + DAY_MS, endpointId: 'ep_2', keyId: 'key_2', cachedTokens: 4 }),
        row({ createdAt: D0 + DAY_MS + 1, endpointId: 'ep_2', costNanos: null }),
        row({ createdAt: D0 - 1 }),
        row({ createdAt: D0 + 10 * DAY_MS }),
        row({ projectId: 'proj_b' }),
      ]);
      const byDay = await store.page(query({}));
      expect(byDay.items.map((t) => [t.group, t.requests, t.reasoningTokens, t.cachedTokens])).toEqual([[D0, 1, 3, 0], [D0 + DAY_MS, 2, 0, 4]]);
      const byEndpoint = await store.page(query({ groupBy: 'endpoint' }));
      expect(byEndpoint.items.map((t) => [t.group, t.requests, t.costNanos, t.unpricedRequests])).toEqual([['ep_1', 1, 1000n, 0], ['ep_2', 2, 1000n, 1]]);
      const byKey = await store.page(query({ groupBy: 'key' }));
      expect(byKey.items.map((t) => t.group)).toEqual(['key_1', 'key_2']);
    });

    it('reports a null cost for a group without a priced turn, and exact sums past 2^53', async () => {
      const big = 2 ** 52;
      await store.storeSegment('s1', [row({ model: 'm-a', costNanos: big }), row({ model: 'm-a', costNanos: big + 1 }), row({ model: 'm-a', costNanos: 3 }), row({ model: 'm-b', costNanos: null })]);
      const items = (await store.page(query({ groupBy: 'model' }))).items;
      expect(items.map((t) => [t.group, t.costNanos])).toEqual([['m-a', 2n ** 53n + 4n], ['m-b', null]]);
    });

    it('pages groups in order with a cursor, a null group last', async () => {
      await store.storeSegment('s1', [row({ workspaceId: 'ws_03' }), row({ workspaceId: null }), row({ workspaceId: 'ws_01' }), row({ workspaceId: 'ws_02' })]);
      const first = await store.page(query({ groupBy: 'workspace', limit: 2 }));
      expect(first.items.map((t) => t.group)).toEqual(['ws_01', 'ws_02']);
      expect(first.hasMore).toBe(true);
      const second = await store.page(query({ groupBy: 'workspace', limit: 2, after: 'ws_02' }));
      expect(second.items.map((t) => t.group)).toEqual(['ws_03', null]);
      expect(second.hasMore).toBe(false);
    });

    it('pages days with the day cursor', async () => {
      await store.storeSegment('s1', [0, 1, 2].map((d) => row({ createdAt: D0 + d * DAY_MS + 7 })));
      const first = await store.page(query({ limit: 2 }));
      expect(first.items.map((t) => t.group)).toEqual([D0, D0 + DAY_MS]);
      expect(first.hasMore).toBe(true);
      const second = await store.page(query({ limit: 2, after: D0 + DAY_MS }));
      expect(second.items.map((t) => t.group)).toEqual([D0 + 2 * DAY_MS]);
      expect(second.hasMore).toBe(false);
    });

    it('keeps budget caps: put, replace, list, remove', async () => {
      await under.addProject('proj_a');
      const caps = { hourlyTokens: 100, dailyTokens: null, hardCapTokens: 1000, hourlyCents: null, dailyCents: 50, hardCapCents: null };
      await store.putBudget({ projectId: 'proj_a', level: 'endpoint', targetId: 'ep_1', caps }, D0);
      await store.putBudget({ projectId: 'proj_a', level: 'workspace', targetId: 'ws_01', caps }, D0);
      await store.putBudget({ projectId: 'proj_a', level: 'endpoint', targetId: 'ep_1', caps: { ...caps, hourlyTokens: 7 } }, D0 + 1);
      const listed = await store.listBudgets();
      expect(listed).toHaveLength(2);
      expect(listed.find((b) => b.level === 'endpoint')).toEqual({ projectId: 'proj_a', level: 'endpoint', targetId: 'ep_1', caps: { ...caps, hourlyTokens: 7 } });
      expect(await store.removeBudget('proj_a', 'endpoint', 'ep_1')).toBe(true);
      expect(await store.removeBudget('proj_a', 'endpoint', 'ep_1')).toBe(false);
      expect((await store.listBudgets()).map((b) => b.targetId)).toEqual(['ws_01']);
    });

    it('lists budget caps in key order (project, level, target), whatever order they were put in', async () => {
      await under.addProject('proj_a');
      await under.addProject('proj_b');
      const caps = { hourlyTokens: 1, dailyTokens: null, hardCapTokens: null, hourlyCents: null, dailyCents: null, hardCapCents: null };
      const keys = [['proj_b', 'endpoint', 'ep_1'], ['proj_a', 'workspace', 'ws_01'], ['proj_a', 'endpoint', 'ep_2'], ['proj_a', 'endpoint', 'ep_1']] as const;
      for (const [projectId, level, targetId] of keys) await store.putBudget({ projectId, level, targetId, caps }, D0);
      expect((await store.listBudgets()).map((b) => `${b.projectId}/${b.level}/${b.targetId}`)).toEqual([
        'proj_a/endpoint/ep_1',
        'proj_a/endpoint/ep_2',
        'proj_a/workspace/ws_01',
        'proj_b/endpoint/ep_1',
      ]);
    });

    it('rebuilds spend per window from the rollup, counting tokens as the limiter does', async () => {
      const now = D0 + 5 * HOUR_MS + 10;
      const since = { hourStart: D0 + 5 * HOUR_MS, dayStart: D0 };
      await store.storeSegment('s1', [
        row({ createdAt: now - 5, promptTokens: 100, completionTokens: 0, costNanos: 7 }),
        row({ createdAt: D0 + HOUR_MS, promptTokens: 10, completionTokens: 10, costNanos: null }),
        row({ createdAt: D0 - DAY_MS, promptTokens: 1, completionTokens: 0, costNanos: 2 }),
        // Cached beyond the total counts nothing, never less than nothing.
        row({ createdAt: now - 1, promptTokens: 5, completionTokens: 0, cachedTokens: 50, workspaceId: null, costNanos: null }),
      ]);
      await store.storeSegment('s2', [row({ createdAt: now - 3, endpointId: 'ep_2', promptTokens: 3, completionTokens: 0, costNanos: 1 })]);
      const endpoints = await store.spend('endpoint', since);
      const ep1 = endpoints.find((r) => r.targetId === 'ep_1');
      expect(ep1).toEqual({ projectId: 'proj_a', targetId: 'ep_1', hourly: 100, daily: 120, total: 121, nanos: { hourly: 7, daily: 7, total: 9 } });
      expect(endpoints.find((r) => r.targetId === 'ep_2')).toMatchObject({ hourly: 3, total: 3, nanos: { total: 1 } });
      const workspaces = await store.spend('workspace', since);
      // The turn without a workspace counts against no workspace.
      expect(workspaces.map((r) => [r.targetId, r.total])).toEqual([['ws_01', 124]]);
    });

    it('lists rows newest first, a page at a time by (created_at, id), ties included, within one project and range', async () => {
      // Three rows share a millisecond: the id breaks the tie, so no row is skipped or repeated between pages.
      await store.storeSegment('r1', [
        row({ requestId: 'a', createdAt: D0 + 1 }),
        row({ requestId: 'b', createdAt: D0 + 2 }),
        row({ requestId: 'c', createdAt: D0 + 2 }),
        row({ requestId: 'd', createdAt: D0 + 2 }),
        row({ requestId: 'e', createdAt: D0 + 3 }),
        row({ requestId: 'old', createdAt: D0 - 1 }),
        row({ requestId: 'other', projectId: 'proj_b', createdAt: D0 + 2 }),
      ]);
      const q = { projectId: 'proj_a', start: D0, end: D0 + DAY_MS, keyId: null, model: null, status: null, limit: 2 };
      const seen: string[] = [];
      let before: { createdAt: number; id: number } | null = null;
      for (let pages = 0; pages < 5; pages += 1) {
        const page = await store.requests({ ...q, before });
        seen.push(...page.items.map((r) => r.requestId));
        const last = page.items.at(-1);
        if (!page.hasMore || !last) break;
        before = { createdAt: last.createdAt, id: last.id };
      }
      expect(seen).toEqual(['e', 'd', 'c', 'b', 'a']);
    });

    it('filters rows by key, model and status, and reads one row back with every column', async () => {
      await store.storeSegment('r2', [
        row({ requestId: 'ok', keyId: 'key_1', model: 'm-1' }),
        row({ requestId: 'bad', keyId: 'key_2', model: 'm-1', status: 'error', errorCode: 'internal_error', upstreamServer: 'http://10.0.0.2:8000/v1', retries: 1, ttftMs: null, costNanos: null }),
        row({ requestId: 'streamed', keyId: 'key_2', model: 'm-2', ttftMs: 12.5, upstreamServer: 'http://10.0.0.1:8000/v1', retries: 0 }),
      ]);
      const q: RequestsQuery = { projectId: 'proj_a', start: D0, end: D0 + DAY_MS, keyId: null, model: null, status: null, limit: 10, before: null };
      const ids = async (over: Partial<RequestsQuery>) => (await store.requests({ ...q, ...over })).items.map((r) => r.requestId);
      expect(await ids({ keyId: 'key_2' })).toEqual(['streamed', 'bad']);
      expect(await ids({ model: 'm-1' })).toEqual(['bad', 'ok']);
      expect(await ids({ status: 'error' })).toEqual(['bad']);
      expect(await ids({ keyId: 'key_2', model: 'm-1', status: 'completed' })).toEqual([]);
      const bad = (await store.requests({ ...q, status: 'error' })).items[0];
      expect(bad).toMatchObject({ requestId: 'bad', status: 'error', errorCode: 'internal_error', upstreamServer: 'http://10.0.0.2:8000/v1', retries: 1, ttftMs: null, costNanos: null, keyId: 'key_2' });
      const streamed = (await store.requests({ ...q, model: 'm-2' })).items[0];
      expect(streamed).toMatchObject({ ttftMs: 12.5, costNanos: 1000, promptTokens: 10, completionTokens: 20, createdAt: D0 });
      expect(await store.request('proj_a', bad?.id ?? -1)).toEqual(bad);
      // Another project's row reads as absent.
      expect(await store.request('proj_b', bad?.id ?? -1)).toBeNull();
    });

    it('reads rows written without the request-detail columns (an older journal segment) as nulls', async () => {
      const { ttftMs: _t, errorCode: _e, upstreamServer: _u, retries: _r, ...legacy } = row({ requestId: 'legacy' });
      await store.storeSegment('r3', [legacy]);
      const page = await store.requests({ projectId: 'proj_a', start: D0, end: D0 + DAY_MS, keyId: null, model: null, status: null, limit: 5, before: null });
      expect(page.items[0]).toMatchObject({ requestId: 'legacy', ttftMs: null, errorCode: null, upstreamServer: null, retries: null });
    });
  });
}
