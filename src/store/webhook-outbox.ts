/**
 * The SQL side of the outbox (core/webhooks/outbox.ts): the event row and its fan-out to subscribers, in
 * one INSERT ... SELECT, inside the caller's transaction. The body is serialized once here; every attempt
 * to every subscriber sends and signs these exact bytes.
 *
 * With PostgreSQL (`relay: true`) the endpoints are not in this file, so there is no fan-out here: every
 * deliverable event is kept in `webhook_events`, in the caller's transaction as before, until the relay
 * (core/webhooks/outbox-relay.ts) has appended it to PostgreSQL and deletes it (createRelaySource).
 */
import { budgetAlertBody, BUDGET_THRESHOLD_TYPE, envelopeBody, type BudgetThresholdEvent } from '../core/webhooks/envelope.js';
import type { OutboxEvent } from '../core/store/webhooks-store.js';
import type { RelaySource } from '../core/webhooks/outbox-relay.js';
import { isDeliverable, type EventType } from '../core/webhooks/event-types.js';
import { webhookIds } from '../core/webhooks/ids.js';
import type { EventOutbox } from '../core/webhooks/outbox.js';
import { writeTransaction, type Db } from './db.js';

export interface OutboxOptions {
  now(): number;
  /** Called after each emission; the dispatcher's wake-up runs once the caller's transaction is done. */
  onEmitted?(): void;
  /** Keep every deliverable event for the relay to PostgreSQL instead of fanning out here. */
  relay?: boolean;
}

export interface StoreOutbox extends EventOutbox {
  /** Test and bench path: many events of one type in one transaction. */
  emitMany(projectId: string, type: EventType, data: readonly Record<string, unknown>[]): number;
  /** An event already enveloped, fanned out unless its id is stored already. Returns the deliveries queued. */
  append(event: OutboxEvent): number;
  /**
   * Whether an emit of `type` would queue anything: an active endpoint of the project subscribes to it
   * (always true in relay mode, where the subscribers are in PostgreSQL). A read, outside any transaction.
   */
  subscribed(projectId: string, type: EventType): boolean;
}

const newEventId = webhookIds.eventId;

export function createOutbox(db: Db, options: OutboxOptions): StoreOutbox {
  const fanOut = db.prepare(`
    INSERT INTO webhook_deliveries (id, webhook_id, event_id, event_type, state, attempt_count, next_attempt_at, created_at, updated_at)
    SELECT 'del_' || lower(hex(randomblob(12))), w.id, @eventId, @type, 'pending', 0, @now, @now, @now
    FROM webhook_endpoints w
    WHERE w.project_id = @projectId AND w.is_active = 1 AND EXISTS (SELECT 1 FROM json_each(w.events) WHERE value = @type)`);
  const insertEvent = db.prepare('INSERT INTO webhook_events (id, project_id, type, body, created_at) VALUES (?, ?, ?, ?, ?)');
  const stored = db.prepare<[string], { one: number }>('SELECT 1 AS one FROM webhook_events WHERE id = ?');
  const subscriber = db.prepare<{ projectId: string; type: string }, { one: number }>(
    `SELECT 1 AS one FROM webhook_endpoints w
     WHERE w.project_id = @projectId AND w.is_active = 1 AND EXISTS (SELECT 1 FROM json_each(w.events) WHERE value = @type) LIMIT 1`,
  );
  const subscribed = (projectId: string, type: EventType): boolean => options.relay === true || subscriber.get({ projectId, type }) !== undefined;

  const write = writeTransaction(db, (projectId: string, type: string, eventId: string, body: string, now: number): number => {
    const queued = fanOut.run({ eventId, type, now, projectId }).changes;
    if (queued > 0) insertEvent.run(eventId, projectId, type, body, now);
    return queued;
  });

  function emitBody(projectId: string, type: EventType, eventId: string, body: string, now: number): number {
    if (!isDeliverable(type)) return 0;
    if (options.relay) {
      // No deliveries are known here (the subscribers are in PostgreSQL): 0, and the relay is woken.
      insertEvent.run(eventId, projectId, type, body, now);
      options.onEmitted?.();
      return 0;
    }
    const queued = write(projectId, type, eventId, body, now);
    if (queued > 0) options.onEmitted?.();
    return queued;
  }

  const append = writeTransaction(db, (event: OutboxEvent): number =>
    stored.get(event.id) ? 0 : write(event.projectId, event.type, event.id, event.body, event.createdAt),
  );

  const emitManyTx = writeTransaction(db, (projectId: string, type: EventType, data: readonly Record<string, unknown>[]): number => {
    let queued = 0;
    for (const d of data) {
      const now = options.now();
      const id = newEventId();
      queued += emitBody(projectId, type, id, envelopeBody(id, type, now, d), now);
    }
    return queued;
  });

  return {
    emit(projectId, type, data) {
      if (type === BUDGET_THRESHOLD_TYPE) throw new Error('budget alerts have their own body: use emitBudgetThreshold');
      // Most events of most projects go nowhere: no envelope, event id or fan-out for them (issue 35).
      if (!isDeliverable(type) || !subscribed(projectId, type)) return 0;
      const now = options.now();
      const id = newEventId();
      return emitBody(projectId, type, id, envelopeBody(id, type, now, data), now);
    },
    emitBudgetThreshold(event: BudgetThresholdEvent) {
      const now = options.now();
      // The legacy body has no id; the row still needs one (never sent).
      return emitBody(event.projectId, BUDGET_THRESHOLD_TYPE, newEventId(), budgetAlertBody(event, now), now);
    },
    emitMany: (projectId, type, data) => emitManyTx(projectId, type, data),
    append(event) {
      const queued = append(event);
      if (queued > 0) options.onEmitted?.();
      return queued;
    },
    subscribed,
  };
}

/** What the relay (core/webhooks/outbox-relay.ts) reads from the SQLite outbox in relay mode. */
export function createRelaySource(db: Db): RelaySource {
  const oldest = db.prepare<[number], { id: string; project_id: string; type: string; body: string; created_at: number }>(
    'SELECT id, project_id, type, body, created_at FROM webhook_events ORDER BY rowid LIMIT ?',
  );
  const remove = db.prepare<[string]>('DELETE FROM webhook_events WHERE id IN (SELECT value FROM json_each(?))');
  return {
    pending: (limit) => oldest.all(limit).map((r) => ({ id: r.id, projectId: r.project_id, type: r.type, body: r.body, createdAt: r.created_at })),
    remove: (ids) => void remove.run(JSON.stringify(ids)),
  };
}
