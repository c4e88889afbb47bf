/**
 * Every write path of the store while another connection holds the write lock (issue 19, defect 2). The
 * usage and decision writer threads, the dispatcher and other processes write the same file. A
 * transaction that began as a reader (a count, then the insert) could not upgrade to the write lock
 * while another connection held it: SQLite answered SQLITE_BUSY at once, without waiting, and the route
 * answered 500. Here a worker thread takes the lock and holds it for a moment: each write must wait for
 * it and succeed.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config.js';
import type { WebhookEndpointRecord } from '../../../src/core/webhooks/delivery.js';
import { createBudgetsRepo } from '../../../src/store/budgets-repo.js';
import { createSqliteCatalog, syncConfig } from '../../../src/store/catalog/sqlite-catalog.js';
import { BUSY_TIMEOUT_MS, openDatabase, type Db } from '../../../src/store/db.js';
import { createEmbeddingCache } from '../../../src/store/embedding-cache.js';
import { createSecretBox } from '../../../src/store/secret-box.js';
import { createSqliteRunner } from '../../../src/store/sql/sqlite-runner.js';
import { createSqliteDispatchStore } from '../../../src/store/webhooks/webhook-delivery-queue.js';
import { createOutbox } from '../../../src/store/webhooks/webhook-outbox.js';
import { webhookEndpointPrograms } from '../../../src/store/webhooks/webhook-endpoints-store.js';
import { makeKeys, PROJECT, testConfig, WS_B, WS_C } from '../../helpers/configs.js';
import { sqliteRouterStore } from '../../helpers/router-stores.js';

const dir = mkdtempSync(join(tmpdir(), 'store-writes-test-'));
const path = join(dir, 'store.db');
const config = parseConfig(testConfig('http://127.0.0.1:9', makeKeys()));
let db: Db;

beforeAll(() => {
  db = openDatabase(path);
  syncConfig(db, config, 1_000);
});
afterAll(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const HOLD_MS = 150;

// Another connection, as the writer threads have: BEGIN IMMEDIATE, a decision row, a pause, COMMIT.
const HOLDER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.exec('BEGIN IMMEDIATE');
db.prepare("INSERT INTO routing_decisions (request_id, project_id, workspace_id, created_at, route_reason, query_preview, detail) VALUES ('req_holder', 'p', NULL, 0, 'r', '', '{}')").run();
parentPort.postMessage('locked');
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, workerData.holdMs);
db.exec('COMMIT');
db.close();
parentPort.postMessage('committed');
`;
const driver = createRequire(import.meta.url).resolve('better-sqlite3');

/** Runs `write` while a worker thread holds the write lock; resolves with its result once the worker has committed. */
async function besideAnotherWriter<T>(write: () => T): Promise<T> {
  const holder = new Worker(HOLDER, { eval: true, workerData: { path, driver, holdMs: HOLD_MS } });
  const messages: string[] = [];
  let notify: () => void = () => undefined;
  holder.on('message', (m: string) => {
    messages.push(m);
    notify();
  });
  const next = async (m: string): Promise<void> => {
    while (!messages.includes(m)) await new Promise<void>((resolve) => (notify = resolve));
  };
  try {
    await next('locked');
    // Synchronous: blocks in SQLite's busy handler until the holder commits (or throws SQLITE_BUSY).
    const result = write();
    await next('committed');
    return result;
  } finally {
    await holder.terminate();
    db.prepare("DELETE FROM routing_decisions WHERE request_id = 'req_holder'").run();
  }
}

const box = createSecretBox(randomBytes(32));
const endpoints = webhookEndpointPrograms('sqlite', box);
let serial = 0;
function webhook(): WebhookEndpointRecord {
  serial += 1;
  const id = `00000000-0000-4000-8000-${String(serial).padStart(12, '0')}`;
  return { id, projectId: PROJECT, url: 'https://93.184.216.34/', description: null, events: ['exec.completed'], isActive: true, metadata: {}, createdAt: serial, updatedAt: serial };
}
function storedWebhook(): string {
  const record = webhook();
  createSqliteRunner(db).writeSync(endpoints.insertCapped(record, 'whsec_x', 20));
  return record.id;
}
const keyRecord = (id: string) => ({
  id,
  projectId: PROJECT,
  name: null,
  prefix: 'svc_mgmt_x',
  scopes: ['inference' as const],
  allowedIps: [],
  blockedIps: [],
  expiresAt: null,
  quotaRequests: 0,
  quotaWindow: 0,
  endpointId: null,
  allowedWorkspaceIds: null,
  userId: null,
  issuedBy: null,
  source: 'api' as const,
  createdAt: 1,
});

describe('a write while another connection holds the write lock', () => {
  it('waits for the lock and inserts a webhook endpoint under the cap (a count, then the insert)', async () => {
    const record = webhook();
    expect(await besideAnotherWriter(() => createSqliteRunner(db).writeSync(endpoints.insertCapped(record, 'whsec_x', 20)))).toBe(true);
    expect(createSqliteRunner(db).readSync(endpoints.get(PROJECT, record.id))).not.toBeNull();
  });

  it('waits for the lock and updates a webhook endpoint (the row, then the update)', async () => {
    const id = storedWebhook();
    const updated = await besideAnotherWriter(() => createSqliteRunner(db).writeSync(endpoints.update(PROJECT, id, { description: 'changed' }, 99)));
    expect(updated?.description).toBe('changed');
  });

  it('waits for the lock and deletes a webhook endpoint with its deliveries (the row, then the deletes)', async () => {
    const id = storedWebhook();
    expect(await besideAnotherWriter(() => createSqliteRunner(db).writeSync(endpoints.delete(PROJECT, id)))).toBe(true);
    expect(createSqliteRunner(db).readSync(endpoints.get(PROJECT, id))).toBeNull();
  });

  it('waits for the lock and syncs the config file', async () => {
    const summary = await besideAnotherWriter(() => syncConfig(db, config, 2_000));
    expect(summary.projects).toBe(config.projects.length);
  });

  it('waits for the lock and inserts, rotates and revokes an API key', async () => {
    const keys = createSqliteCatalog(db);
    await besideAnotherWriter(() => keys.insert(keyRecord('key_concurrent'), 'hash-1'));
    await besideAnotherWriter(() => keys.rotate({ id: 'key_concurrent', hash: 'hash-2', prefix: 'svc_mgmt_y', now: 2, graceUntil: 3 }));
    expect(await besideAnotherWriter(() => keys.revoke('key_concurrent', 4, 'api'))).toBe(true);
    expect(keys.findCredential('hash-2')?.key.revokedAt).toBe(4);
  });

  it('waits for the lock and fans an event out, claims its delivery and records the attempt', async () => {
    storedWebhook();
    const outbox = createOutbox(db, { now: () => 5_000 });
    expect(await besideAnotherWriter(() => outbox.emit(PROJECT, 'exec.completed', { n: 1 }))).toBeGreaterThan(0);
    const deliveries = createSqliteDispatchStore(db, box, { instanceId: 'inst_c0ffee', leaseMs: 15_000 });
    const claimed = await besideAnotherWriter(() => deliveries.claimDue(5_001, 1, [], (rows) => rows));
    const [due] = claimed.claimed;
    if (!due) throw new Error('no delivery was queued');
    const outcome = { ok: true, httpStatus: 200, responseBody: 'ok', errorMessage: null };
    await besideAnotherWriter(() => deliveries.recordResults([{ seq: due.seq, kind: 'attempted', state: 'delivered', attemptCount: 1, nextAttemptAt: null, outcome, at: 5_002 }], 5_002));
    expect(db.prepare('SELECT state FROM webhook_deliveries WHERE seq = ?').get(due.seq)).toEqual({ state: 'delivered' });
  });

  it('waits for the lock and writes workspace routing, budgets, router settings and embeddings', async () => {
    await besideAnotherWriter(() => sqliteRouterStore(db).applyWorkspaceChange(PROJECT, WS_B, { routingMode: 'concrete' }, 6_000));
    const budgets = createBudgetsRepo(db);
    const caps = { hourlyTokens: null, dailyTokens: 10, hardCapTokens: null };
    await besideAnotherWriter(() => budgets.put({ projectId: PROJECT, level: 'workspace', targetId: WS_C, caps }, 6_001));
    expect(await besideAnotherWriter(() => budgets.remove(PROJECT, 'workspace', WS_C))).toBe(true);
    await besideAnotherWriter(() => sqliteRouterStore(db).saveRouterState(PROJECT, { settings: {}, rules: [] }, 6_002));
    const vector = new Float32Array([1, 2, 3]);
    await besideAnotherWriter(() => createEmbeddingCache(db).putMany('model', [{ hash: 'h', vector }], 6_003));
    expect(createEmbeddingCache(db).getMany('model', ['h']).get('h')).toEqual(vector);
  });
});

describe('the store connections', () => {
  it(`wait up to ${BUSY_TIMEOUT_MS} ms for another connection's lock (busy_timeout)`, () => {
    expect(db.pragma('busy_timeout', { simple: true })).toBe(BUSY_TIMEOUT_MS);
  });

  it('open every transaction through writeTransaction (BEGIN IMMEDIATE), never a plain db.transaction', () => {
    const src = join(process.cwd(), 'src');
    const files = (folder: string): string[] =>
      readdirSync(folder).flatMap((name) => {
        const full = join(folder, name);
        return statSync(full).isDirectory() ? files(full) : full.endsWith('.ts') ? [full] : [];
      });
    const offenders = files(src).filter((f) => f !== join(src, 'store/db.ts') && /\b\w*[dD][bB]\.transaction\(/.test(readFileSync(f, 'utf8')));
    expect(offenders).toEqual([]);
  });
});
