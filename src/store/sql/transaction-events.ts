/**
 * A webhook event written inside a program's transaction (SPEC Webhooks: an event is never lost nor sent
 * for a change that did not commit). The two outboxes differ by design, not by dialect: on SQLite the
 * instance's file has its own outbox (store/webhooks/webhook-outbox.ts: fanned out there, or kept for the
 * relay when the endpoints are in PostgreSQL), so the event is one native step on the program's
 * connection; on PostgreSQL it is appended to the shared tables (store/webhooks/webhook-append.ts, the
 * same statements the relay's append runs) as the program's own steps. Chosen at the composition root.
 */
import type { EventType } from '../../core/webhooks/event-types.js';
import type { EventOutbox } from '../../core/webhooks/outbox.js';
import { appendEvents, appendQueries, eventsOf } from '../webhooks/webhook-append.js';
import type { WebhooksTables } from '../webhooks/webhooks-tables.js';
import { sqlFor } from './sql-builder.js';
import { native, type SqlProgram } from './sql-program.js';

export interface TransactionEvents {
  /** Queues the event's deliveries; returns how many. */
  emit(projectId: string, type: EventType, data: Record<string, unknown>, at: number): SqlProgram<number>;
  /**
   * True when the event is known to reach no endpoint (SQLite: no active endpoint of the project subscribes
   * to it), so a change that is only this event need not open a transaction. False when not known here.
   */
  goesNowhere(projectId: string, type: EventType): Promise<boolean>;
}

const wrongBackend = (name: string) => (): never => {
  throw new Error(`${name} events ran on the other backend's connection: the store was wired to the wrong runner`);
};

/** SQLite: the outbox's own statements, on the program's connection (a savepoint of its transaction). */
export function sqliteTransactionEvents(outbox: EventOutbox & { subscribedNow?(projectId: string, type: EventType): boolean }): TransactionEvents {
  return {
    emit: (projectId, type, data) => native({ sqlite: () => outbox.emit(projectId, type, data), postgres: wrongBackend('SQLite') }),
    goesNowhere: (projectId, type) => Promise.resolve(outbox.subscribedNow !== undefined && !outbox.subscribedNow(projectId, type)),
  };
}

/** PostgreSQL: appended and fanned out by the program's own steps, with the change notice to every dispatcher. */
export function postgresTransactionEvents(): TransactionEvents {
  const q = appendQueries(sqlFor<WebhooksTables>('postgres').db, 'postgres');
  return {
    emit: (projectId, type, data, at) => appendEvents(q, eventsOf(projectId, type, data, at)),
    // The subscribers are in PostgreSQL: asking would cost the round trip the skip would save.
    goesNowhere: () => Promise.resolve(false),
  };
}
