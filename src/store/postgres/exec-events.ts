/**
 * The exec stores' events, enveloped and appended in the state change's transaction (webhooks-store.ts
 * appendEventsIn), so they commit with the rows, once, and any replica's dispatcher delivers them.
 */
import type pg from 'pg';
import type { StoredEvent } from '../../core/store/exec-agents-store.js';
import type { PgStore } from './pg-store.js';
import { appendEventsIn, eventsOf } from './webhooks-store.js';

/** Reserved types are never delivered, so never kept (eventsOf drops them, as the SQLite outbox does). */
export function appendExecEvents(store: PgStore, client: pg.PoolClient, projectId: string, events: readonly StoredEvent[], at: number): Promise<number> {
  return appendEventsIn(store, client, events.flatMap((e) => eventsOf(projectId, e.type, e.data, at)));
}
