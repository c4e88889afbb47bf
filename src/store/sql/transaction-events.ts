/**
 * A webhook event written inside a program's transaction (SPEC Webhooks: an event is never lost nor sent
 * for a change that did not commit). The two outboxes differ by design, not by dialect: SQLite fans out to
 * its own endpoint rows (store/webhook-outbox.ts), PostgreSQL to the shared tables (postgres/
 * webhooks-store.ts emitEventIn). So each backend's is one native step, chosen at the composition root.
 */
import type pg from 'pg';
import type { EventType } from '../../core/webhooks/event-types.js';
import type { EventOutbox } from '../../core/webhooks/outbox.js';
import type { PgStore } from '../postgres/pg-store.js';
import { emitEventIn } from '../postgres/webhooks-store.js';
import { native, type SqlProgram } from './sql-program.js';

export interface TransactionEvents {
  /** Queues the event's deliveries; returns how many. */
  emit(projectId: string, type: EventType, data: Record<string, unknown>, at: number): SqlProgram<number>;
  /**
   * True when the event is known to reach no endpoint (SQLite: no active endpoint of the project subscribes
   * to it), so a change that is only this event need not open a transaction. False when not known here.
   */
  goesNowhere(projectId: string, type: EventType): boolean;
}

const wrongBackend = (name: string) => (): never => {
  throw new Error(`${name} events ran on the other backend's connection: the store was wired to the wrong runner`);
};

/** SQLite: the outbox's own statements, on the program's connection (a savepoint of its transaction). */
export function sqliteTransactionEvents(outbox: EventOutbox & { subscribed?(projectId: string, type: EventType): boolean }): TransactionEvents {
  return {
    emit: (projectId, type, data) => native({ sqlite: () => outbox.emit(projectId, type, data), postgres: wrongBackend('SQLite') }),
    goesNowhere: (projectId, type) => outbox.subscribed !== undefined && !outbox.subscribed(projectId, type),
  };
}

/** PostgreSQL: fanned out on the program's connection; `client` is the transaction's pooled client. */
export function postgresTransactionEvents(store: Pick<PgStore, 'notifyChange'>): TransactionEvents {
  return {
    emit: (projectId, type, data, at) =>
      native({ sqlite: wrongBackend('PostgreSQL'), postgres: (client) => emitEventIn(store, client as pg.PoolClient, projectId, type, data, at) }),
    // The subscribers are in PostgreSQL: asking would cost the round trip the skip would save.
    goesNowhere: () => false,
  };
}
