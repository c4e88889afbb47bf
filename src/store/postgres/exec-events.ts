/**
 * The exec stores' events, enveloped and appended in the state change's transaction (webhooks-store.ts
 * appendEventsIn), so they commit with the rows, once, and any replica's dispatcher delivers them.
 */
import type pg from 'pg';
import type { StoredEvent } from '../../core/store/exec-agents-store.js';
import type { OutboxEvent } from '../../core/store/webhooks-store.js';
import { envelopeBody } from '../../core/webhooks/envelope.js';
import { isDeliverable } from '../../core/webhooks/event-types.js';
import { webhookIds } from '../../core/webhooks/ids.js';
import type { PgStore } from './pg-store.js';
import { appendEventsIn } from './webhooks-store.js';

/** Reserved types are never delivered, so never kept (as the SQLite outbox). */
export function appendExecEvents(store: PgStore, client: pg.PoolClient, projectId: string, events: readonly StoredEvent[], at: number): Promise<number> {
  const outbox: OutboxEvent[] = [];
  for (const e of events) {
    if (!isDeliverable(e.type)) continue;
    const id = webhookIds.eventId();
    outbox.push({ id, projectId, type: e.type, body: envelopeBody(id, e.type, at, e.data), createdAt: at });
  }
  return appendEventsIn(store, client, outbox);
}
