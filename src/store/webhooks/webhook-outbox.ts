/**
 * The outbox of an instance's SQLite file (core/webhooks/outbox.ts): its emitters write events inside
 * their own synchronous transactions on that file, so the append (webhook-append.ts, the statements both
 * backends share) runs here with the SQLite runner's `writeSync`, a savepoint of the caller's transaction.
 * The body is serialized once here; every attempt to every subscriber sends and signs these exact bytes.
 *
 * With PostgreSQL (`relay: true`) the endpoints are not in this file, so there is no fan-out here: every
 * deliverable event is kept in `webhook_events`, in the caller's transaction as before, until the relay
 * (core/webhooks/outbox-relay.ts) has appended it to PostgreSQL and deletes it (createRelaySource).
 */
import { sql } from 'kysely';
import type { OutboxEvent } from '../../core/store/webhooks-store.js';
import { budgetAlertBody, BUDGET_THRESHOLD_TYPE, envelopeBody, type BudgetThresholdEvent } from '../../core/webhooks/envelope.js';
import { isDeliverable, type EventType } from '../../core/webhooks/event-types.js';
import { webhookIds } from '../../core/webhooks/ids.js';
import type { EventOutbox } from '../../core/webhooks/outbox.js';
import type { RelaySource } from '../../core/webhooks/outbox-relay.js';
import { writeTransaction, type Db } from '../db.js';
import { listOf, oneOf, type ListParam } from '../sql/one-of.js';
import { prepared, rows, run } from '../sql/sql-program.js';
import { sqlFor } from '../sql/sql-builder.js';
import { createSqliteRunner } from '../sql/sqlite-runner.js';
import { endpointWriteCount } from './endpoint-write-count.js';
import { appendEvents, appendQueries, keepEvent, subscribed as subscribedProgram } from './webhook-append.js';
import type { WebhooksTables } from './webhooks-tables.js';

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
   * (always true in relay mode, where the subscribers are in PostgreSQL). A read outside any transaction,
   * answered at once; its answer is kept for the rest of this event-loop turn, or until this process
   * changes an endpoint (endpoint-write-count.ts).
   */
  subscribedNow(projectId: string, type: EventType): boolean;
}

const newEventId = webhookIds.eventId;

export function createOutbox(db: Db, options: OutboxOptions): StoreOutbox {
  const runner = createSqliteRunner(db);
  const q = appendQueries(sqlFor<WebhooksTables>('sqlite').db, 'sqlite');
  const subscribed = (projectId: string, type: EventType): boolean => options.relay === true || runner.readSync(subscribedProgram(q, projectId, type));
  // A foreground Response asks once as it finishes. An answer kept in memory until data_version or
  // total_changes moved cost more under load than the query (13.9 against 10.7 us: the WAL read lock is the
  // cost, and data_version takes it too), and a timed one would miss a sibling's new endpoint. The lookups of
  // one event-loop turn share one read: the first reads, the others of the turn take its answer. They shared
  // one read lock at setImmediate before (readSoon), which held every finishing Response's objects (its
  // frames, its Response, its turn) until the check phase: under load V8 then promoted ~5 MB a scavenge in
  // 8 runs of 17 against none of 23 answered at once (issue 35, bench/RESULTS.md round 7). What kept them
  // was the drain deadline's Set (http/drain-state.ts, round 8); the wait only made more of each turn
  // reachable through it. Answering at once stays: no turn waits for a read.
  let answers: Map<string, boolean> | null = null;
  let answersAt = -1;
  const forgetAnswers = (): void => {
    answers = null;
  };
  const subscribedNow = (projectId: string, type: EventType): boolean => {
    if (options.relay === true) return true;
    if (answers === null || answersAt !== endpointWriteCount()) {
      if (answers === null) setImmediate(forgetAnswers);
      answers = new Map();
      answersAt = endpointWriteCount();
    }
    const key = `${projectId}\u0000${type}`;
    let answer = answers.get(key);
    if (answer === undefined) answers.set(key, (answer = subscribed(projectId, type)));
    return answer;
  };

  function emitBody(projectId: string, type: EventType, id: string, body: string, now: number): number {
    if (!isDeliverable(type)) return 0;
    const event: OutboxEvent = { id, projectId, type, body, createdAt: now };
    if (options.relay) {
      // No deliveries are known here (the subscribers are in PostgreSQL): 0, and the relay is woken.
      runner.writeSync(keepEvent(q, event));
      options.onEmitted?.();
      return 0;
    }
    const queued = runner.writeSync(appendEvents(q, [event]));
    if (queued > 0) options.onEmitted?.();
    return queued;
  }

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
      const queued = runner.writeSync(appendEvents(q, [event]));
      if (queued > 0) options.onEmitted?.();
      return queued;
    },
    subscribedNow,
  };
}

/** What the relay (core/webhooks/outbox-relay.ts) reads from the SQLite outbox in relay mode. */
export function createRelaySource(db: Db): RelaySource {
  const runner = createSqliteRunner(db);
  const { db: b } = sqlFor<WebhooksTables>('sqlite');
  // SQLite's table keeps insertion order in its rowid (PostgreSQL's, never read here, has `seq`).
  const oldest = prepared((limit: number) => b.selectFrom('webhook_events').select(['id', 'project_id', 'type', 'body', 'created_at']).orderBy(sql`rowid`).limit(limit));
  const removeAll = prepared((ids: ListParam<string>) => b.deleteFrom('webhook_events').where(oneOf('sqlite', 'id', ids, 'text')));
  return {
    pending: (limit) =>
      runner.readSync(rows(oldest(limit))).map((r) => ({ id: r.id, projectId: r.project_id, type: r.type, body: r.body, createdAt: r.created_at })),
    remove: (ids) => void runner.readSync(run(removeAll(listOf('sqlite', ids)))),
  };
}
