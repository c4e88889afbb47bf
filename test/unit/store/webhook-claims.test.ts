/**
 * Webhook deliveries claimed with a lease (issue 12, store/webhooks/webhook-delivery-queue.ts): two instances on
 * one store never hold the same row, only the claimant writes an outcome, and the claims of an instance
 * that is gone (or whose lease ran out) go back to pending for another to take.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DueDelivery } from '../../../src/core/webhooks/delivery.js';
import { openDatabase, type Db } from '../../../src/store/db.js';
import { createInstanceRegistry, type InstanceRegistry } from '../../../src/store/instances-registry.js';
import { createSecretBox } from '../../../src/store/secret-box.js';
import { createSqliteDispatchStore, type SqliteDispatchStore } from '../../../src/store/webhooks/webhook-delivery-queue.js';
import { createOutbox } from '../../../src/store/webhooks/webhook-outbox.js';
import { createSqliteRunner } from '../../../src/store/sql/sqlite-runner.js';
import { webhookEndpointPrograms } from '../../../src/store/webhooks/webhook-endpoints-store.js';

const LEASE = 15_000;
const DUE = 1_000;
const everything = (rows: DueDelivery[]): DueDelivery[] => rows;
const ok = { ok: true, httpStatus: 200, responseBody: 'ok', errorMessage: null };

let dbPath: string;
let db: Db;
let registries: InstanceRegistry[];
let wall: number;

beforeEach(() => {
  dbPath = join(mkdtempSync(join(tmpdir(), 'switchboard-claims-')), 'store.db');
  db = openDatabase(dbPath);
  db.prepare("INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES ('proj_a', 'u-a', 'a', 'A', 'paid', 0, 0, 0, 0)").run();
  const box = createSecretBox(randomBytes(32));
  createSqliteRunner(db).writeSync(webhookEndpointPrograms('sqlite', box).insertCapped({ id: 'w1', projectId: 'proj_a', url: 'https://93.184.216.34/', description: null, events: ['exec.completed'], isActive: true, metadata: {}, createdAt: 1, updatedAt: 1 }, 'whsec_x', 20));
  createOutbox(db, { now: () => DUE }).emitMany('proj_a', 'exec.completed', Array.from({ length: 10 }, (_, n) => ({ n })));
  registries = [];
  wall = Date.now();
  boxOf = box;
});

afterEach(() => {
  for (const r of registries) r.close();
  db.close();
});

let boxOf: ReturnType<typeof createSecretBox>;

/** An instance: registered, with its deliveries repository on a connection of its own. */
function instance(): { registry: InstanceRegistry; deliveries: SqliteDispatchStore } {
  const registry = createInstanceRegistry({ dbPath, db, leaseMs: LEASE, onError: (m) => expect.fail(m), onWarn: () => undefined });
  registries.push(registry);
  return { registry, deliveries: createSqliteDispatchStore(openDatabase(dbPath, 'NORMAL'), boxOf, { instanceId: registry.id, leaseMs: LEASE, wallClock: () => wall }) };
}

const states = (): Record<string, number> =>
  Object.fromEntries((db.prepare('SELECT state, count(*) AS n FROM webhook_deliveries GROUP BY state').all() as { state: string; n: number }[]).map((r) => [r.state, r.n]));

describe('deliveries claimed by several instances', () => {
  it('never hands one due row to two instances', () => {
    const a = instance();
    const b = instance();
    const first = a.deliveries.claimDue(DUE, 6, [], everything).claimed;
    const second = b.deliveries.claimDue(DUE, 6, [], everything).claimed;
    expect(first).toHaveLength(6);
    expect(second).toHaveLength(4);
    expect(first.map((d) => d.seq).filter((seq) => second.some((d) => d.seq === seq))).toEqual([]);
    expect(b.deliveries.claimDueFor('w1', DUE, 10)).toEqual([]);
  });

  it('writes an outcome only for the claimant', () => {
    const a = instance();
    const b = instance();
    const [row] = a.deliveries.claimDue(DUE, 1, [], everything).claimed;
    if (!row) throw new Error('nothing claimed');
    const delivered = { seq: row.seq, kind: 'attempted' as const, state: 'delivered' as const, attemptCount: 1, nextAttemptAt: null, outcome: ok, at: DUE + 1 };
    b.deliveries.recordResults([delivered], DUE + 1);
    expect(states()).toEqual({ pending: 9, sending: 1 });
    a.deliveries.recordResults([delivered], DUE + 1);
    expect(states()).toEqual({ pending: 9, delivered: 1 });
  });

  it('gives back the claims of an instance that is gone, and those whose lease ran out, for another to send', () => {
    const a = instance();
    const b = instance();
    expect(a.deliveries.claimDue(DUE, 4, [], everything).claimed).toHaveLength(4);
    expect(b.deliveries.claimDue(DUE, 4, [], everything).claimed).toHaveLength(4);
    expect(b.deliveries.releaseAbandoned()).toBe(0);

    a.registry.close(); // a is gone: its row deleted
    expect(b.deliveries.releaseAbandoned()).toBe(4);
    expect(states()).toEqual({ pending: 6, sending: 4 });

    // b hangs: its claims are not renewed, and the lease runs out.
    const c = instance();
    wall += LEASE + 1;
    expect(c.deliveries.releaseAbandoned()).toBe(4);
    expect(c.deliveries.claimDue(DUE, 10, [], everything).claimed).toHaveLength(10);
  });

  it('keeps the claims of a live instance that renews them past the first lease', () => {
    const a = instance();
    const b = instance();
    expect(a.deliveries.claimDue(DUE, 4, [], everything).claimed).toHaveLength(4);
    wall += LEASE - 1;
    expect(a.deliveries.renewClaims()).toBe(4);
    wall += LEASE - 1;
    expect(b.deliveries.releaseAbandoned()).toBe(0);
    expect(b.deliveries.claimDue(DUE, 10, [], everything).claimed).toHaveLength(6);
  });
});
