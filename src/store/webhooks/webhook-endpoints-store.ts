/**
 * The webhook endpoints port (core/store/webhooks-store.ts `WebhookEndpointsStore`: the management
 * routes' half of the aggregate), written once for SQLite and PostgreSQL (issue 33): each method is a
 * program (store/sql/sql-program.ts) its backend's runner drives. Signing secrets are sealed (secret-box.ts)
 * with the webhook id as associated data and opened only to sign. The delivery queue, the outbox's append
 * and the retention are the dispatcher's half (webhook-delivery-queue.ts, webhook-append.ts,
 * webhook-retention.ts), assembled with this in webhooks-store.ts.
 */
import { sql, type Kysely, type Selectable } from 'kysely';
import type { WebhookEndpointsStore } from '../../core/store/webhooks-store.js';
import type { DeliveryRecord, Page, WebhookEndpointRecord, WebhookPatch } from '../../core/webhooks/delivery.js';
import type { SecretBox } from '../secret-box.js';
import { sqlFor } from '../sql/sql-builder.js';
import { first, prepared, rawQuery, rows, run, truthy, type SqlDialect, type SqlProgram } from '../sql/sql-program.js';
import type { SqlRunner } from '../sql/sql-runner.js';
import { storedIn } from '../sql/table-schema.js';
import { noteEndpointWrite } from './endpoint-write-count.js';
import type { WebhooksTables } from './webhooks-tables.js';

type EndpointRow = Selectable<WebhooksTables['webhook_endpoints']>;
type Programs = { [K in keyof WebhookEndpointsStore]: (...args: Parameters<WebhookEndpointsStore[K]>) => SqlProgram<Awaited<ReturnType<WebhookEndpointsStore[K]>>> };

export interface WebhookEndpointsStoreDeps {
  readonly runner: SqlRunner;
  readonly box: SecretBox;
}

/** The changes run as one transaction each; the reads statement by statement. */
export function createWebhookEndpointsStore({ runner, box }: WebhookEndpointsStoreDeps): WebhookEndpointsStore {
  const p = webhookEndpointPrograms(runner.dialect, box);
  // Counted once settled, committed or not: the outbox's answers of this turn are only dropped early.
  const change = <R>(write: Promise<R>): Promise<R> => write.finally(noteEndpointWrite);
  return {
    insertCapped: (record, secret, max) => change(runner.write(p.insertCapped(record, secret, max))),
    get: (projectId, id) => runner.read(p.get(projectId, id)),
    secret: (projectId, id) => runner.read(p.secret(projectId, id)),
    list: (projectId, limit, after) => runner.read(p.list(projectId, limit, after)),
    update: (projectId, id, patch, now) => change(runner.write(p.update(projectId, id, patch, now))),
    delete: (projectId, id) => change(runner.write(p.delete(projectId, id))),
    deliveries: (webhookId, limit, after) => runner.read(p.deliveries(webhookId, limit, after)),
    redeliver: (webhookId, deliveryId, now) => runner.read(p.redeliver(webhookId, deliveryId, now)),
  };
}

/** The port's programs, for a runner's `read`/`write` or, on SQLite, `readSync`/`writeSync` (tests, CLI). */
export function webhookEndpointPrograms(dialect: SqlDialect, box: SecretBox): Programs {
  const c = endpointContext(dialect, box);
  return { ...endpointWrites(c), ...endpointReads(c) };
}

type EndpointContext = ReturnType<typeof endpointContext>;

/** What the programs share: the builder, the prepared reads, the dialect's column codec and row mapping. */
function endpointContext(dialect: SqlDialect, box: SecretBox) {
  const { db } = sqlFor<WebhooksTables>(dialect);
  const q = endpointQueries(db);
  const stored = storedIn(dialect);
  // PostgreSQL's row locks; SQLite's IMMEDIATE transaction already excludes every other writer.
  const lockRow = dialect === 'postgres';
  const rowOf = (projectId: string, id: string, lock = false) => first(lock && lockRow ? q.byIdLocked(projectId, id) : q.byId(projectId, id));
  const toRecord = (r: EndpointRow): WebhookEndpointRecord => ({
    id: r.id,
    projectId: r.project_id,
    url: r.url,
    description: r.description,
    events: stored.read(r.events),
    isActive: truthy(r.is_active),
    metadata: stored.read(r.metadata),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  });
  return { dialect, box, db, q, stored, lockRow, rowOf, toRecord };
}

function endpointWrites({ dialect, box, db, stored, rowOf, toRecord }: EndpointContext): Pick<Programs, 'insertCapped' | 'update' | 'delete' | 'redeliver'> {
  function* insertCapped(record: WebhookEndpointRecord, secret: string, max: number): SqlProgram<boolean> {
    // One creator per project at a time, so the count and the insert hold together across replicas: on
    // PostgreSQL an advisory lock (before the first endpoint there is no row to lock).
    if (dialect === 'postgres') yield* run(rawQuery(sql`select pg_advisory_xact_lock(hashtext('webhook_endpoints:' || ${record.projectId}))`, db));
    const count = yield* first(db.selectFrom('webhook_endpoints').select(sql<number>`count(*)`.as('n')).where('project_id', '=', record.projectId));
    if (Number(count?.n ?? 0) >= max) return false;
    yield* run(
      db.insertInto('webhook_endpoints').values({
        id: record.id,
        project_id: record.projectId,
        url: record.url,
        description: record.description,
        secret_sealed: box.seal(secret, record.id),
        events: stored.textArray(record.events),
        is_active: true,
        metadata: stored.json(record.metadata),
        created_at: record.createdAt,
        updated_at: record.createdAt,
      }),
    );
    return true;
  }

  function* update(projectId: string, id: string, patch: WebhookPatch, now: number): SqlProgram<WebhookEndpointRecord | null> {
    const row = yield* rowOf(projectId, id, true);
    if (!row) return null;
    const current = toRecord(row);
    const next: WebhookEndpointRecord = {
      ...current,
      url: patch.url ?? current.url,
      events: patch.events ?? current.events,
      description: patch.description === undefined ? current.description : patch.description,
      isActive: patch.isActive ?? current.isActive,
      metadata: patch.metadata ?? current.metadata,
      updatedAt: now,
    };
    yield* run(
      db
        .updateTable('webhook_endpoints')
        .set({ url: next.url, description: next.description, events: stored.textArray(next.events), is_active: next.isActive, metadata: stored.json(next.metadata), updated_at: now })
        .where('project_id', '=', projectId)
        .where('id', '=', id),
    );
    return next;
  }

  function* remove(projectId: string, id: string): SqlProgram<boolean> {
    if (!(yield* rowOf(projectId, id, true))) return false;
    // Events only this endpoint's deliveries referenced go with them.
    yield* run(
      db
        .deleteFrom('webhook_events')
        .where('id', 'in', db.selectFrom('webhook_deliveries').select('event_id').distinct().where('webhook_id', '=', id))
        .where(({ not, exists, selectFrom }) =>
          not(exists(selectFrom('webhook_deliveries as o').select(sql.lit(1).as('one')).whereRef('o.event_id', '=', 'webhook_events.id').where('o.webhook_id', '<>', id))),
        ),
    );
    yield* run(db.deleteFrom('webhook_deliveries').where('webhook_id', '=', id));
    yield* run(db.deleteFrom('webhook_endpoints').where('project_id', '=', projectId).where('id', '=', id));
    return true;
  }

  function* redeliver(webhookId: string, deliveryId: string, now: number): SqlProgram<boolean> {
    // An attempt in flight keeps its claim and due time: its outcome decides what follows.
    const changed = yield* run(
      db
        .updateTable('webhook_deliveries')
        .set({
          state: sql`case when state = 'sending' then state else 'pending' end`,
          next_attempt_at: sql`case when state = 'sending' then next_attempt_at else ${now} end`,
          updated_at: now,
        })
        .where('webhook_id', '=', webhookId)
        .where('id', '=', deliveryId),
    );
    return changed > 0;
  }

  return { insertCapped, update, delete: remove, redeliver };
}

function endpointReads({ box, q, rowOf, toRecord }: EndpointContext): Pick<Programs, 'get' | 'secret' | 'list' | 'deliveries'> {
  function* secretOf(projectId: string, id: string): SqlProgram<string | null> {
    const row = yield* first(q.sealed(projectId, id));
    if (!row) return null;
    try {
      return box.open(row.secret_sealed, id);
    } catch {
      return null;
    }
  }

  // Pages are newest first; `after` is the id of the previous page's last item, its seq the bound.
  function* list(projectId: string, limit: number, after: string | null): SqlProgram<Page<WebhookEndpointRecord> | null> {
    const cursor = after === null ? null : yield* rowOf(projectId, after);
    if (cursor === undefined) return null;
    const found = yield* rows(q.page(projectId, cursor?.seq ?? Number.MAX_SAFE_INTEGER, limit + 1));
    return { items: found.slice(0, limit).map(toRecord), hasMore: found.length > limit };
  }

  function* deliveries(webhookId: string, limit: number, after: string | null): SqlProgram<Page<DeliveryRecord> | null> {
    const cursor = after === null ? null : yield* first(q.deliverySeq(webhookId, after));
    if (cursor === undefined) return null;
    const found = yield* rows(q.deliveryPage(webhookId, cursor?.seq ?? Number.MAX_SAFE_INTEGER, limit + 1));
    return { items: found.slice(0, limit).map(toDelivery), hasMore: found.length > limit };
  }

  return {
    get: function* (projectId, id) {
      const row = yield* rowOf(projectId, id);
      return row ? toRecord(row) : null;
    },
    secret: secretOf,
    list,
    deliveries,
  };
}

const DELIVERY_COLUMNS = ['seq', 'id', 'webhook_id', 'event_type', 'state', 'attempt_count', 'http_status', 'response_body', 'created_at'] as const;

const toDelivery = (r: Pick<Selectable<WebhooksTables['webhook_deliveries']>, (typeof DELIVERY_COLUMNS)[number]>): DeliveryRecord => ({
  id: r.id,
  webhookId: r.webhook_id,
  eventType: r.event_type,
  state: r.state,
  attemptCount: r.attempt_count,
  httpStatus: r.http_status,
  responseBody: r.response_body,
  createdAt: r.created_at,
});

/** The lookups every management call starts with, compiled once (sql-program.ts `prepared`). */
function endpointQueries(db: Kysely<WebhooksTables>) {
  const endpoint = (projectId: string, id: string) => db.selectFrom('webhook_endpoints').where('project_id', '=', projectId).where('id', '=', id);
  return {
    byId: prepared((projectId: string, id: string) => endpoint(projectId, id).selectAll()),
    byIdLocked: prepared((projectId: string, id: string) => endpoint(projectId, id).selectAll().forUpdate()),
    sealed: prepared((projectId: string, id: string) => endpoint(projectId, id).select('secret_sealed')),
    page: prepared((projectId: string, beforeSeq: number, limit: number) =>
      db.selectFrom('webhook_endpoints').selectAll().where('project_id', '=', projectId).where('seq', '<', beforeSeq).orderBy('seq', 'desc').limit(limit),
    ),
    deliverySeq: prepared((webhookId: string, id: string) => db.selectFrom('webhook_deliveries').select('seq').where('webhook_id', '=', webhookId).where('id', '=', id)),
    deliveryPage: prepared((webhookId: string, beforeSeq: number, limit: number) =>
      db.selectFrom('webhook_deliveries').select(DELIVERY_COLUMNS).where('webhook_id', '=', webhookId).where('seq', '<', beforeSeq).orderBy('seq', 'desc').limit(limit),
    ),
  };
}
