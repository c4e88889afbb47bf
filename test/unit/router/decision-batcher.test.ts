/**
 * router/decision-batcher.ts over the real SQLite router store: rows reach the store in batches, sealed,
 * flush() waits for everything recorded before it, and a failed batch is reported without stopping the
 * next ones.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RouterStore } from '../../../src/core/store/router-store.js';
import { createBatchedDecisionLog } from '../../../src/router/decision-batcher.js';
import { openDatabase, type Db } from '../../../src/store/db.js';
import type { DecisionRecord } from '../../../src/store/decision-log.js';
import { loadSecretBox } from '../../../src/store/secret-box.js';
import { tempDir } from '../../helpers/processes.js';
import { sqliteRouterStore } from '../../helpers/router-stores.js';

const PROJECT = 'proj_batch';
const T0 = 1_700_000_000_000;
const box = loadSecretBox(':memory:', []);

const record = (i: number, preview = `prompt ${i}`): DecisionRecord => ({
  requestId: `req_${i}`,
  projectId: PROJECT,
  workspaceId: null,
  createdAt: T0 + i,
  routeReason: 'similarity',
  preview,
  detail: { endpoint_slug: 'math' },
});

let dir: string;
let db: Db;
let store: RouterStore;
beforeEach(() => {
  dir = tempDir();
  db = openDatabase(join(dir, 'store.db'));
  db.prepare("INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES (?, 'u', 'b', 'B', 'paid', 60, 0, 0, 0)").run(PROJECT);
  store = sqliteRouterStore(db);
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('createBatchedDecisionLog', () => {
  it('stores everything recorded before flush() in batches of at most 256 rows, excerpts sealed', async () => {
    const sizes: number[] = [];
    const counting: RouterStore = { ...store, insertDecisions: (rows) => (sizes.push(rows.length), store.insertDecisions(rows)) };
    const log = createBatchedDecisionLog(counting, box, (message) => expect.fail(message));
    for (let i = 0; i < 600; i++) log.record(record(i, i === 0 ? '' : `prompt ${i}`));
    await log.flush();
    expect(sizes).toEqual([256, 256, 88]);
    const rows = await store.decisions(PROJECT, 0, 1000);
    expect(rows).toHaveLength(600);
    const newest = rows[0];
    expect(newest?.sealedPreview).not.toContain('prompt');
    expect(box.open(newest?.sealedPreview ?? '', 'req_599')).toBe('prompt 599');
    expect(rows.at(-1)?.sealedPreview).toBe('');
  });

  it('reports a failed batch and still writes the next one', async () => {
    const errors: string[] = [];
    let failNext = true;
    const flaky: RouterStore = {
      ...store,
      insertDecisions: (rows) => (failNext ? ((failNext = false), Promise.reject(new Error('store down'))) : store.insertDecisions(rows)),
    };
    const log = createBatchedDecisionLog(flaky, box, (message) => errors.push(message));
    log.record(record(1));
    await log.flush();
    log.record(record(2));
    await log.close();
    expect(errors).toEqual(['store down']);
    expect((await store.decisions(PROJECT, 0, 10)).map((r) => r.requestId)).toEqual(['req_2']);
  });

  it('prunes after the rows recorded before it are stored', async () => {
    const log = createBatchedDecisionLog(store, box, (message) => expect.fail(message));
    log.record(record(1));
    log.record(record(5));
    await log.flush();
    await log.prune(T0 + 3);
    expect((await store.decisions(PROJECT, 0, 10)).map((r) => r.requestId)).toEqual(['req_5']);
  });
});
