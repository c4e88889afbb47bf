import { beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../../src/store/db.js';
import { createSqliteRunner } from '../../../src/store/sql/sqlite-runner.js';
import { pruneWebhookHistory } from '../../../src/store/webhooks/webhook-retention.js';

const DAY = 86_400_000;
const NOW = 100 * DAY;
let db: Db;

function event(id: string, createdAt: number): void {
  db.prepare("INSERT INTO webhook_events (id, project_id, type, body, created_at) VALUES (?, 'proj_a', 'exec.completed', '{}', ?)").run(id, createdAt);
}

function delivery(eventId: string, state: string, updatedAt: number): void {
  db.prepare(
    "INSERT INTO webhook_deliveries (id, webhook_id, event_id, event_type, state, attempt_count, next_attempt_at, created_at, updated_at) VALUES ('del_' || lower(hex(randomblob(6))), 'w1', ?, 'exec.completed', ?, 1, NULL, ?, ?)",
  ).run(eventId, state, updatedAt, updatedAt);
}

const count = (table: string): number => (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
const states = (): string[] => (db.prepare('SELECT state FROM webhook_deliveries ORDER BY seq').all() as { state: string }[]).map((r) => r.state);

beforeEach(() => {
  db = openDatabase(':memory:');
});

describe('webhook retention', () => {
  it('deletes ended deliveries and then events older than the retention, never pending or in-flight ones', async () => {
    event('evt_old', NOW - 40 * DAY);
    delivery('evt_old', 'delivered', NOW - 40 * DAY);
    delivery('evt_old', 'failed', NOW - 35 * DAY);
    event('evt_waiting', NOW - 40 * DAY);
    delivery('evt_waiting', 'pending', NOW - 40 * DAY);
    delivery('evt_waiting', 'sending', NOW - 40 * DAY);
    event('evt_recent', NOW - 5 * DAY);
    delivery('evt_recent', 'delivered', NOW - 5 * DAY);

    const result = await pruneWebhookHistory(createSqliteRunner(db), NOW, 30 * DAY);
    expect(result).toEqual({ deliveries: 2, events: 1 });
    expect(states()).toEqual(['pending', 'sending', 'delivered']);
    expect((db.prepare('SELECT id FROM webhook_events ORDER BY id').all() as { id: string }[]).map((r) => r.id)).toEqual(['evt_recent', 'evt_waiting']);
  });

  it('prunes a large backlog in batches to the last row', async () => {
    const insert = db.transaction(() => {
      for (let i = 0; i < 1234; i++) {
        event(`evt_${i}`, NOW - 60 * DAY);
        delivery(`evt_${i}`, 'delivered', NOW - 60 * DAY);
      }
    });
    insert();
    expect(await pruneWebhookHistory(createSqliteRunner(db), NOW, 30 * DAY)).toEqual({ deliveries: 1234, events: 1234 });
    expect(count('webhook_deliveries')).toBe(0);
    expect(count('webhook_events')).toBe(0);
  });
});
