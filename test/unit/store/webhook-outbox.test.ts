import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { WebhookEndpointRecord } from '../../../src/core/webhooks/delivery.js';
import { openDatabase, type Db } from '../../../src/store/db.js';
import { createSecretBox } from '../../../src/store/secret-box.js';
import { createOutbox, type StoreOutbox } from '../../../src/store/webhooks/webhook-outbox.js';
import { createSqliteRunner } from '../../../src/store/sql/sqlite-runner.js';
import { createWebhookEndpointsStore, webhookEndpointPrograms } from '../../../src/store/webhooks/webhook-endpoints-store.js';

let db: Db;
let outbox: StoreOutbox;
let wakes = 0;

function endpoint(id: string, events: string[], isActive = true, projectId = 'proj_a'): void {
  const runner = createSqliteRunner(db);
  const endpoints = webhookEndpointPrograms('sqlite', createSecretBox(randomBytes(32)));
  const record: WebhookEndpointRecord = { id, projectId, url: 'https://93.184.216.34/', description: null, events, isActive: true, metadata: {}, createdAt: 1, updatedAt: 1 };
  runner.writeSync(endpoints.insertCapped(record, 'whsec_x', 20));
  if (!isActive) runner.writeSync(endpoints.update(projectId, id, { isActive: false }, 2));
}

const deliveries = () => db.prepare('SELECT webhook_id, event_id, event_type, state, attempt_count, next_attempt_at FROM webhook_deliveries ORDER BY webhook_id').all() as Record<string, unknown>[];
const events = () => db.prepare('SELECT id, project_id, type, body FROM webhook_events').all() as { id: string; body: string }[];

beforeEach(() => {
  db = openDatabase(':memory:');
  db.prepare("INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES ('proj_a', 'u-a', 'a', 'A', 'paid', 0, 0, 0, 0)").run();
  db.prepare("INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES ('proj_b', 'u-b', 'b', 'B', 'paid', 0, 0, 0, 0)").run();
  wakes = 0;
  outbox = createOutbox(db, { now: () => 1_700_000_000_500, onEmitted: () => (wakes += 1) });
});

describe('the outbox', () => {
  it('queues one pending delivery per active subscriber of the type, due now, sharing one stored envelope', () => {
    endpoint('w1', ['exec.completed']);
    endpoint('w2', ['exec.completed', 'exec.failed']);
    endpoint('w3', ['exec.failed']);
    endpoint('w4', ['exec.completed'], false);
    endpoint('w5', ['exec.completed'], true, 'proj_b');
    expect(outbox.emit('proj_a', 'exec.completed', { invocation_id: 'inv_1' })).toBe(2);
    expect(deliveries()).toEqual([
      expect.objectContaining({ webhook_id: 'w1', event_type: 'exec.completed', state: 'pending', attempt_count: 0, next_attempt_at: 1_700_000_000_500 }),
      expect.objectContaining({ webhook_id: 'w2', event_type: 'exec.completed', state: 'pending' }),
    ]);
    const [event] = events();
    expect(JSON.parse(event?.body ?? '')).toEqual({ id: event?.id, object: 'event', type: 'exec.completed', created_at: 1_700_000_000, data: { invocation_id: 'inv_1' } });
    expect(event?.id).toMatch(/^evt_[0-9a-f]{24}$/);
    expect(wakes).toBe(1);
  });

  it('commits nothing when the transaction of the state change rolls back', () => {
    endpoint('w1', ['agent.created']);
    const change = db.transaction(() => {
      outbox.emit('proj_a', 'agent.created', { agent_id: 'agt_1' });
      throw new Error('the state change failed');
    });
    expect(() => change()).toThrow('the state change failed');
    expect(deliveries()).toEqual([]);
    expect(events()).toEqual([]);
  });

  it('commits the event with the state change that caused it', () => {
    endpoint('w1', ['agent.created']);
    db.exec('CREATE TABLE agents (id TEXT)');
    db.transaction(() => {
      db.prepare("INSERT INTO agents VALUES ('agt_1')").run();
      outbox.emit('proj_a', 'agent.created', { agent_id: 'agt_1' });
    })();
    expect(deliveries()).toHaveLength(1);
  });

  it('writes nothing for a reserved type or a type nobody subscribes to', () => {
    endpoint('w1', ['exec.ambiguous']);
    expect(outbox.emit('proj_a', 'exec.ambiguous', {})).toBe(0);
    expect(outbox.emit('proj_a', 'exec.completed', {})).toBe(0);
    expect(deliveries()).toEqual([]);
    expect(events()).toEqual([]);
    expect(wakes).toBe(0);
  });

  it('sends budget alerts in the legacy flat body, not enveloped', () => {
    endpoint('w1', ['budget.threshold_reached']);
    const queued = outbox.emitBudgetThreshold({
      projectId: 'proj_a',
      projectName: 'A',
      alertId: 'alert_1',
      alertName: 'Monthly 80%',
      threshold: 80,
      currentSpendCents: 8050,
      budgetAmountCents: 10_000,
    });
    expect(queued).toBe(1);
    expect(JSON.parse(events()[0]?.body ?? '')).toEqual({
      eventType: 'budget.threshold_reached',
      alertId: 'alert_1',
      alertName: 'Monthly 80%',
      projectId: 'proj_a',
      projectName: 'A',
      threshold: 80,
      currentSpendCents: 8050,
      budgetAmountCents: 10_000,
      spendPercentage: 80.5,
      timestamp: '2023-11-14T22:13:20.500Z',
    });
  });

  it('refuses to envelope a budget alert', () => {
    expect(() => outbox.emit('proj_a', 'budget.threshold_reached', {})).toThrow(/emitBudgetThreshold/);
  });
});

describe('whether anyone subscribes to an event', () => {
  const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

  it("sees a sibling process's endpoint from the next event-loop turn, and one changed through this process at once", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'outbox-subscribed-'));
    const path = join(dir, 'gateway.db');
    const mine = openDatabase(path);
    const sibling = openDatabase(path);
    try {
      mine.prepare("INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES ('proj_a', 'u-a', 'a', 'A', 'paid', 0, 0, 0, 0)").run();
      const box = createOutbox(mine, { now: () => 1 });
      expect(box.subscribedNow('proj_a', 'response.completed')).toBe(false);

      // A sibling's new endpoint: this turn keeps the answer it read (one read a turn), the next one reads again.
      db = sibling;
      endpoint('w1', ['response.completed']);
      expect(box.subscribedNow('proj_a', 'response.completed')).toBe(false);
      await nextTurn();
      expect(box.subscribedNow('proj_a', 'response.completed')).toBe(true);
      expect(box.subscribedNow('proj_a', 'response.failed')).toBe(false);

      // Disabled through this process's endpoints store (the management routes' way): counted at once.
      const endpoints = createWebhookEndpointsStore({ runner: createSqliteRunner(mine), box: createSecretBox(randomBytes(32)) });
      await endpoints.update('proj_a', 'w1', { isActive: false }, 2);
      expect(box.subscribedNow('proj_a', 'response.completed')).toBe(false);
    } finally {
      mine.close();
      sibling.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
