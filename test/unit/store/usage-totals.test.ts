/**
 * The usage totals query (store/usage/usage-reads.ts) on a real SQLite file: grouping, the range and project
 * bounds, pages and their cursors (a null group last), exact BigInt cost sums, the index it reads through,
 * migration 006's model backfill, and the reader thread that runs it off the event loop (compiled from
 * dist/, as threads run JavaScript).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../../src/store/db.js';
import { migration001 } from '../../../src/store/migrations/001-platform.js';
import { migration002 } from '../../../src/store/migrations/002-usage.js';
import { migration003 } from '../../../src/store/migrations/003-limits-keys.js';
import { migration004 } from '../../../src/store/migrations/004-webhooks.js';
import { migration005 } from '../../../src/store/migrations/005-router.js';
import { DAY_MS, USAGE_GROUPS, type UsageQuery } from '../../../src/core/store/usage-store.js';
import { createSqliteUsageReads } from '../../../src/store/usage/sqlite-usage-reads.js';
import { createUsageReader } from '../../../dist/src/store/usage-reader.js';

const dir = mkdtempSync(join(tmpdir(), 'usage-totals-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const D0 = 20_000 * DAY_MS;

interface Row {
  project?: string;
  workspace?: string | null;
  endpoint?: string;
  key?: string;
  model?: string | null;
  prompt?: number;
  completion?: number;
  cached?: number;
  reasoning?: number | null;
  cost?: number | bigint | null;
  at: number;
}

function insert(db: Db, rows: Row[]): void {
  const stmt = db.prepare(`
    INSERT INTO usage_events (request_id, project_id, workspace_id, endpoint_id, key_id, route, prompt_tokens, completion_tokens,
      cached_tokens, reasoning_tokens, service_tier, tier_multiplier, status, usage_source, latency_ms, created_at, model, cost_nanos)
    VALUES (?, ?, ?, ?, ?, 'chat', ?, ?, ?, ?, 'default', 1, 'completed', 'upstream', 1, ?, ?, ?)`);
  rows.forEach((r, i) =>
    stmt.run(`req_${i}`, r.project ?? 'proj_a', r.workspace === undefined ? 'ws_01' : r.workspace, r.endpoint ?? 'ep_1', r.key ?? 'key_1',
      r.prompt ?? 10, r.completion ?? 20, r.cached ?? 0, r.reasoning ?? null, r.at, r.model === undefined ? 'model-1' : r.model, r.cost === undefined ? 1000 : r.cost),
  );
}

function fresh(name: string, rows: Row[]): Db {
  const db = openDatabase(join(dir, `${name}.db`));
  insert(db, rows);
  return db;
}

const query = (q: Partial<UsageQuery>): UsageQuery => ({ projectId: 'proj_a', start: D0, end: D0 + 10 * DAY_MS, groupBy: 'day', limit: null, after: null, ...q });

describe('usage totals', () => {
  it('sums each group over the range of one project only', () => {
    const db = fresh('sums', [
      { at: D0, prompt: 1, completion: 2, cached: 1, reasoning: 2, cost: 5 },
      { at: D0 + 1000, prompt: 3, completion: 4, reasoning: null, cost: null },
      { at: D0 + DAY_MS, prompt: 5, completion: 6, cost: 7 },
      { at: D0 - 1, cost: 1_000_000 },
      { at: D0 + 10 * DAY_MS, cost: 1_000_000 },
      { at: D0, project: 'proj_b', cost: 1_000_000 },
    ]);
    expect(createSqliteUsageReads(db).page(query({}))).toEqual({
      items: [
        { group: D0, requests: 2, promptTokens: 4, completionTokens: 6, cachedTokens: 1, reasoningTokens: 2, costNanos: 5n, unpricedRequests: 1 },
        { group: D0 + DAY_MS, requests: 1, promptTokens: 5, completionTokens: 6, cachedTokens: 0, reasoningTokens: 0, costNanos: 7n, unpricedRequests: 0 },
      ],
      hasMore: false,
    });
    db.close();
  });

  it('reports a group with no priced row as cost null, not 0', () => {
    const db = fresh('unpriced', [{ at: D0, cost: null }, { at: D0, cost: null, endpoint: 'ep_2' }, { at: D0, cost: 0, endpoint: 'ep_2' }]);
    const items = createSqliteUsageReads(db).page(query({ groupBy: 'endpoint' })).items;
    expect(items.map((t) => [t.group, t.costNanos, t.unpricedRequests])).toEqual([['ep_1', null, 1], ['ep_2', 0n, 1]]);
    db.close();
  });

  it('keeps the cost sum exact past 2^53 nano-dollars', () => {
    const big = 2n ** 53n + 1n;
    const db = fresh('big', [{ at: D0, cost: big }, { at: D0, cost: big }]);
    expect(createSqliteUsageReads(db).page(query({})).items[0]?.costNanos).toBe(2n * big);
    db.close();
  });

  it('pages in group order, a null group last, with has_more from one row beyond the page', () => {
    const db = fresh('pages', [
      { at: D0, workspace: null },
      { at: D0, workspace: 'ws_03' },
      { at: D0, workspace: 'ws_01' },
      { at: D0, workspace: 'ws_02' },
      { at: D0, workspace: 'ws_02' },
    ]);
    const totals = createSqliteUsageReads(db);
    const seen: (string | number | null)[][] = [];
    let after: string | number | null = null;
    for (;;) {
      const page = totals.page(query({ groupBy: 'workspace', limit: 2, after }));
      seen.push(page.items.map((t) => t.group));
      if (!page.hasMore) break;
      after = page.items.at(-1)?.group ?? null;
    }
    expect(seen).toEqual([['ws_01', 'ws_02'], ['ws_03', null]]);
    expect(totals.page(query({ groupBy: 'workspace', limit: 4 })).hasMore).toBe(false);
    db.close();
  });

  it('turns a day cursor into the start of the next day', () => {
    const db = fresh('days', [{ at: D0 + 5 }, { at: D0 + DAY_MS + 5 }, { at: D0 + 3 * DAY_MS }]);
    const totals = createSqliteUsageReads(db);
    expect(totals.page(query({ limit: 1 }))).toMatchObject({ items: [{ group: D0 }], hasMore: true });
    expect(totals.page(query({ limit: 1, after: D0 }))).toMatchObject({ items: [{ group: D0 + DAY_MS }], hasMore: true });
    expect(totals.page(query({ limit: 5, after: D0 + DAY_MS }))).toMatchObject({ items: [{ group: D0 + 3 * DAY_MS }], hasMore: false });
    db.close();
  });

  it('reads the range through usage_events_project_time for every grouping, with and without a cursor', () => {
    const db = fresh('plan', []);
    const totals = createSqliteUsageReads(db);
    for (const groupBy of USAGE_GROUPS) {
      for (const withCursor of [false, true]) {
        const statement = totals.pageStatement({ projectId: 'p', start: 0, end: 1, groupBy, limit: 1, after: withCursor ? (groupBy === 'day' ? 0 : 'x') : null });
        const plan = db.prepare(`EXPLAIN QUERY PLAN ${statement.sql}`).all(...statement.parameters) as { detail: string }[];
        expect(plan.map((p) => p.detail).join('\n'), `${groupBy} ${withCursor}`).toMatch(/SEARCH usage_events USING INDEX usage_events_project_time \(project_id=\? AND created_at>\? AND created_at<\?\)/);
      }
    }
    db.close();
  });
});

describe('migration 006', () => {
  it('adds model and cost to the ledger, giving rows written before it their endpoint\'s model', () => {
    const path = join(dir, 'v5.db');
    const old = new Database(path);
    for (const sql of [migration001, migration002, migration003, migration004, migration005]) old.exec(sql);
    old.pragma('user_version = 5');
    old.exec(`INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at)
      VALUES ('proj_a', 'u', 'a', 'A', 'paid', 1, 1, 0, 0)`);
    old.exec(`INSERT INTO endpoints (id, project_id, slug, name, kind, tier, status, region, workspace_ids, model, upstream, created_at, updated_at)
      VALUES ('ep_1', 'proj_a', 'one', 'One', 'chat', 'gpu', 'active', 'local', '[]', '{"id":"acme/one","context_window":8}', '{}', 0, 0)`);
    old.exec(`INSERT INTO usage_events (request_id, project_id, workspace_id, endpoint_id, key_id, route, prompt_tokens, completion_tokens,
      cached_tokens, reasoning_tokens, service_tier, tier_multiplier, status, usage_source, latency_ms, created_at)
      VALUES ('r1', 'proj_a', NULL, 'ep_1', 'k', 'chat', 1, 1, 0, NULL, 'default', 1, 'completed', 'upstream', 1, 0),
             ('r2', 'proj_a', NULL, 'ep_gone', 'k', 'chat', 1, 1, 0, NULL, 'default', 1, 'completed', 'upstream', 1, 0)`);
    old.close();
    const db = openDatabase(path);
    expect(db.prepare('SELECT request_id, model, cost_nanos FROM usage_events ORDER BY id').all()).toEqual([
      { request_id: 'r1', model: 'acme/one', cost_nanos: null },
      { request_id: 'r2', model: null, cost_nanos: null },
    ]);
    const columns = (db.prepare('PRAGMA table_info(budgets)').all() as { name: string }[]).map((c) => c.name);
    expect(columns).toEqual(expect.arrayContaining(['hourly_cents', 'daily_cents', 'hard_cap_cents']));
    db.close();
  });
});

describe('the usage reader thread', () => {
  it('answers the same pages as the query on its own connection, and closes', async () => {
    const db = fresh('reader', [{ at: D0, endpoint: 'ep_1' }, { at: D0, endpoint: 'ep_2', cost: 2n ** 60n }]);
    const direct = createSqliteUsageReads(db).page(query({ groupBy: 'endpoint', limit: 1 }));
    const reader = createUsageReader(join(dir, 'reader.db'));
    const [a, b] = await Promise.all([reader.page(query({ groupBy: 'endpoint', limit: 1 })), reader.page(query({ groupBy: 'endpoint', after: 'ep_1' }))]);
    expect(a).toEqual(direct);
    expect(b.items[0]?.costNanos).toBe(2n ** 60n);
    await reader.close();
    db.close();
  });

  it('answers the same Requests pages as its own connection, filtered and after a cursor', async () => {
    const db = fresh('reader-requests', [{ at: D0, key: 'key_1' }, { at: D0 + 1, key: 'key_2' }, { at: D0 + 2, key: 'key_1', model: null }, { at: D0 + 3, key: 'key_1' }]);
    const direct = createSqliteUsageReads(db);
    const reader = createUsageReader(join(dir, 'reader-requests.db'));
    const first = { projectId: 'proj_a', start: D0, end: D0 + DAY_MS, keyId: 'key_1', model: null, status: null, limit: 2, before: null };
    const page = await reader.requests(first);
    expect(page).toEqual(direct.requests(first));
    expect(page.items.map((r) => r.createdAt)).toEqual([D0 + 3, D0 + 2]);
    expect(page.hasMore).toBe(true);
    const last = page.items[1];
    if (!last) throw new Error('the first page had no second row');
    const next = { ...first, before: { createdAt: last.createdAt, id: last.id } };
    expect(await reader.requests(next)).toEqual(direct.requests(next));
    expect((await reader.requests(next)).items.map((r) => r.createdAt)).toEqual([D0]);
    await reader.close();
    db.close();
  });
});
