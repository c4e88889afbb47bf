/**
 * The outbox's append, written once for both backends (issue 33): each event row and one pending delivery
 * per active endpoint of its project subscribed to its type, in the caller's transaction (a program's
 * steps: the state change an event describes commits with it, or neither does). An event whose id is
 * stored already is skipped whole, with its fan-out: a relay may append the same event twice, and it is
 * fanned out once. An event no endpoint subscribes to is not kept (it would only wait for retention).
 *
 * Where these statements reach the endpoints differs by design, not here: SQLite's emitters append to the
 * instance's own file (webhook-outbox.ts), PostgreSQL's to the shared tables (sql/transaction-events.ts).
 * What differs by dialect is two expressions, below: how a delivery id is drawn and how "the endpoint
 * subscribes to the type" reads an events column (JSON text on SQLite, text[] on PostgreSQL).
 */
import { sql, type Expression, type Kysely, type RawBuilder } from 'kysely';
import type { OutboxEvent } from '../../core/store/webhooks-store.js';
import { envelopeBody } from '../../core/webhooks/envelope.js';
import { isDeliverable, type EventType } from '../../core/webhooks/event-types.js';
import { webhookIds } from '../../core/webhooks/ids.js';
import { changeNotice } from '../sql/change-notices.js';
import { listOf, oneOf, type ListParam } from '../sql/one-of.js';
import { first, prepared, preparedRow, rows, run, type SqlDialect, type SqlProgram } from '../sql/sql-program.js';
import { LIMIT_ONE } from '../sql/sql-builder.js';
import type { WebhooksTables } from './webhooks-tables.js';

/** The change notice of new due deliveries: every replica's dispatcher looks at once instead of at its next poll. */
export const WEBHOOK_DELIVERIES_TOPIC = 'webhooks.deliveries';

/** Events inserted per statement (5 parameters an event: far under either backend's limit). */
const EVENT_CHUNK = 1000;

/** The event of `type`, enveloped at `at`; none for a reserved type (never delivered, never kept). */
export function eventsOf(projectId: string, type: EventType, data: Record<string, unknown>, at: number): OutboxEvent[] {
  if (!isDeliverable(type)) return [];
  const id = webhookIds.eventId();
  return [{ id, projectId, type, body: envelopeBody(id, type, at, data), createdAt: at }];
}

/** `del_<24 hex>`, drawn by the database for each row of a fan-out (webhookIds.deliveryId's form). */
function newDeliveryId(dialect: SqlDialect): RawBuilder<string> {
  return dialect === 'postgres' ? sql<string>`'del_' || substr(md5(gen_random_uuid()::text), 1, 24)` : sql<string>`'del_' || lower(hex(randomblob(12)))`;
}

/** The endpoint `w` subscribes to `type`. */
function subscribes(dialect: SqlDialect, type: Expression<string>): RawBuilder<boolean> {
  return dialect === 'postgres' ? sql<boolean>`${type} = ANY(w.events)` : sql<boolean>`EXISTS (SELECT 1 FROM json_each(w.events) WHERE value = ${type})`;
}

const PENDING = sql.lit<'pending'>('pending');

const eventRow = (e: OutboxEvent) => ({ id: e.id, project_id: e.projectId, type: e.type, body: e.body, created_at: e.createdAt });

export type AppendQueries = ReturnType<typeof appendQueries>;

/** The append's statements for the dialect; those taken per event compiled once. */
export function appendQueries(db: Kysely<WebhooksTables>, dialect: SqlDialect) {
  type EventRow = ReturnType<typeof eventRow>;
  const insertNew = (values: EventRow | EventRow[]) =>
    db
      .insertInto('webhook_events')
      .values(values)
      .onConflict((oc) => oc.column('id').doNothing());
  /** Ordered as the events were made, then the endpoints: the dispatcher takes due rows in seq order. */
  const fanOut = (events: RawBuilder<boolean>) =>
    db
      .insertInto('webhook_deliveries')
      .columns(['id', 'webhook_id', 'event_id', 'event_type', 'state', 'attempt_count', 'next_attempt_at', 'created_at', 'updated_at'])
      .expression(
        db
          .selectFrom('webhook_events as e')
          .innerJoin('webhook_endpoints as w', 'w.project_id', 'e.project_id')
          .select([
            newDeliveryId(dialect).as('id'),
            'w.id as webhook_id',
            'e.id as event_id',
            'e.type as event_type',
            PENDING.as('state'),
            sql.lit(0).as('attempt_count'),
            'e.created_at as next_attempt_at',
            'e.created_at as created_at',
            'e.created_at as updated_at',
          ])
          .where(events)
          .where('w.is_active', '=', true)
          .where(subscribes(dialect, sql.ref('e.type')))
          .orderBy('e.created_at')
          .orderBy('w.seq'),
      );
  const unneeded = sql<boolean>`NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = webhook_events.id)`;
  // One event (every emit) by its key; several (a relayed batch) as one list parameter.
  return {
    dialect,
    insertOne: preparedRow((row: EventRow) => insertNew(row)),
    insertMany: (events: readonly OutboxEvent[]) => insertNew(events.map(eventRow)).returning('id'),
    fanOutOne: prepared((id: string) => fanOut(sql<boolean>`e.id = ${id}`)),
    fanOutMany: prepared((ids: ListParam<string>) => fanOut(oneOf(dialect, 'e.id', ids, 'text'))),
    dropOne: prepared((id: string) => db.deleteFrom('webhook_events').where('id', '=', id).where(unneeded)),
    dropUnneeded: prepared((ids: ListParam<string>) => db.deleteFrom('webhook_events').where(oneOf(dialect, 'id', ids, 'text')).where(unneeded)),
    subscriber: prepared((projectId: string, type: string) =>
      db.selectFrom('webhook_endpoints as w').select(sql.lit(1).as('one')).where('w.project_id', '=', projectId).where('w.is_active', '=', true).where(subscribes(dialect, sql.val(type))).limit(LIMIT_ONE),
    ),
  };
}

/** Appends `events` and their fan-out; tells every replica's dispatcher when deliveries were queued. */
export function* appendEvents(q: AppendQueries, events: readonly OutboxEvent[]): SqlProgram<number> {
  const [one] = events;
  const queued = events.length === 1 && one ? yield* appendOne(q, one) : yield* appendMany(q, events);
  if (queued > 0) yield* changeNotice(WEBHOOK_DELIVERIES_TOPIC);
  return queued;
}

function* appendOne(q: AppendQueries, event: OutboxEvent): SqlProgram<number> {
  if ((yield* run(q.insertOne(eventRow(event)))) === 0) return 0;
  const queued = yield* run(q.fanOutOne(event.id));
  if (queued === 0) yield* run(q.dropOne(event.id));
  return queued;
}

function* appendMany(q: AppendQueries, events: readonly OutboxEvent[]): SqlProgram<number> {
  let queued = 0;
  for (let at = 0; at < events.length; at += EVENT_CHUNK) {
    const fresh = (yield* rows(q.insertMany(events.slice(at, at + EVENT_CHUNK)))).map((r) => r.id);
    if (fresh.length === 0) continue;
    const ids = listOf(q.dialect, fresh);
    queued += yield* run(q.fanOutMany(ids));
    yield* run(q.dropUnneeded(ids));
  }
  return queued;
}

/** An event kept for the relay (SQLite in relay mode: the subscribers are in PostgreSQL). */
export function* keepEvent(q: AppendQueries, event: OutboxEvent): SqlProgram<void> {
  yield* run(q.insertOne(eventRow(event)));
}

/** Whether an active endpoint of the project subscribes to `type`. */
export function* subscribed(q: AppendQueries, projectId: string, type: EventType): SqlProgram<boolean> {
  return (yield* first(q.subscriber(projectId, type))) !== undefined;
}
