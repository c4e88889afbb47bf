/**
 * The delivery queue (core/store/webhooks-store.ts `WebhookDeliveryQueue`, the dispatcher's store),
 * written once for SQLite and PostgreSQL (issue 33): claim due rows, keep and give back claims, record
 * outcomes. Every call is one short statement or transaction. Delivery is at least once: a claimed row
 * whose outcome is lost is sent again.
 *
 * Several instances share the queue (issue 12): a row is claimed by one instance with a lease
 * (`claimed_by`, `claim_expires_at`, wall clock), and only the claimant writes its outcome. The claim
 * reads the candidates and marks them in one transaction, so each due row is claimed by exactly one
 * instance (how each dialect keeps two claimants apart: webhook-claim.ts). The claimant extends its
 * claims at every heartbeat; a claim whose instance is no longer registered (killed, then deleted by a
 * sibling's sweep) or whose lease ran out (the instance hung) goes back to `pending` and is claimed again,
 * so a killed instance's deliveries are sent by another.
 *
 * On SQLite the dispatcher may run this on its own connection opened with synchronous=NORMAL: in WAL mode
 * such a commit survives a process crash; a power loss can roll back the last outcomes, and those
 * deliveries are then sent again, which at-least-once allows. Its answers are synchronous there
 * (`createSqliteDispatchStore`), used at once by the dispatcher as before the port existed.
 */
import { sql, type Kysely } from 'kysely';
import type { DeliveryClaimant, WebhookDeliveryQueue } from '../../core/store/webhooks-store.js';
import type { DispatchStore } from '../../core/webhooks/dispatcher.js';
import type { DeliveryResult, DueDelivery } from '../../core/webhooks/delivery.js';
import type { Db } from '../db.js';
import type { SecretBox } from '../secret-box.js';
import { listOf, oneOf, type ListParam } from '../sql/one-of.js';
import { LIMIT_ONE, sqlFor } from '../sql/sql-builder.js';
import { first, prepared, rows, run, type SqlDialect, type SqlProgram } from '../sql/sql-program.js';
import type { SqlRunner } from '../sql/sql-runner.js';
import { createSqliteRunner } from '../sql/sqlite-runner.js';
import { lockedForClaim, outcomeWriter } from './webhook-claim.js';
import { dueDeliveryReader } from './webhook-due-rows.js';
import type { WebhooksTables } from './webhooks-tables.js';

type PickClaims = (candidates: DueDelivery[]) => DueDelivery[];
type Claimed = { claimed: DueDelivery[]; seen: number };

/** Literals, not parameters: SQLite uses a partial index only when the query names its condition's value. */
const PENDING = sql.lit<'pending'>('pending');
const SENDING = sql.lit<'sending'>('sending');

/** The queue's operations as programs; `anyDue` is the read an idle poll stops at. */
export interface DeliveryQueuePrograms {
  anyDue(now: number): SqlProgram<boolean>;
  releaseAbandoned(): SqlProgram<number>;
  renewClaims(): SqlProgram<number>;
  claimDue(now: number, limit: number, skipWebhooks: readonly string[], pick: PickClaims): SqlProgram<Claimed>;
  claimDueFor(webhookId: string, now: number, limit: number): SqlProgram<DueDelivery[]>;
  recordResults(results: readonly DeliveryResult[], now: number): SqlProgram<void>;
}

export function deliveryQueuePrograms(dialect: SqlDialect, box: SecretBox, claimant: DeliveryClaimant): DeliveryQueuePrograms {
  const { db } = sqlFor<WebhooksTables>(dialect);
  const me = claimant.instanceId;
  const wall = claimant.wallClock ?? Date.now;
  const until = (): number => wall() + claimant.leaseMs;
  const q = queueQueries(db, dialect, me);
  const toDue = dueDeliveryReader(box);
  const recordAttempts = outcomeWriter(db, dialect, me);

  function* claim(candidates: ReturnType<typeof q.due>, now: number, pick: PickClaims): SqlProgram<Claimed> {
    const found = (yield* rows(candidates)).map(toDue);
    const picked = pick(found);
    if (picked.length === 0) return { claimed: [], seen: found.length };
    const won = new Set((yield* rows(q.markClaimed(listOf(dialect, picked.map((r) => r.seq)), until(), now))).map((r) => r.seq));
    return { claimed: picked.filter((r) => won.has(r.seq)), seen: found.length };
  }

  return {
    anyDue: function* (now) {
      return (yield* first(q.anyDue(now))) !== undefined;
    },
    releaseAbandoned: () => run(q.releaseAbandoned(wall())),
    renewClaims: () => run(q.renew(until())),
    claimDue: (now, limit, skip, pick) => claim(q.due(now, listOf(dialect, skip), limit), now, pick),
    claimDueFor: function* (webhookId, now, limit) {
      return (yield* claim(q.dueFor(webhookId, now, limit), now, (candidates) => candidates)).claimed;
    },
    recordResults: function* (results, now) {
      const attempted = results.flatMap((r) => (r.kind === 'attempted' ? [r] : []));
      const released = results.flatMap((r) => (r.kind === 'released' ? [r.seq] : []));
      if (attempted.length > 0) yield* recordAttempts(attempted);
      if (released.length > 0) yield* run(q.release(listOf(dialect, released), now));
    },
  };
}

/** The queue's statements, compiled once (sql-program.ts `prepared`): the dispatcher takes them per batch. */
function queueQueries(db: Kysely<WebhooksTables>, dialect: SqlDialect, me: string) {
  const dueRows = (now: number) =>
    db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_endpoints as w', 'w.id', 'd.webhook_id')
      .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
      .select(['d.seq', 'd.id', 'd.webhook_id', 'd.attempt_count', 'w.url', 'w.secret_sealed', 'e.body'])
      .where('d.state', '=', PENDING)
      .where('d.next_attempt_at', '<=', now)
      .where('w.is_active', '=', true);
  const claimable = (query: ReturnType<typeof dueRows>, limit: number) => lockedForClaim(dialect, query.orderBy('d.next_attempt_at').orderBy('d.seq').limit(limit));
  return {
    anyDue: prepared((now: number) => db.selectFrom('webhook_deliveries').select(sql.lit(1).as('one')).where('state', '=', PENDING).where('next_attempt_at', '<=', now).limit(LIMIT_ONE)),
    due: prepared((now: number, skip: ListParam<string>, limit: number) => claimable(dueRows(now).where(({ not }) => not(oneOf(dialect, 'd.webhook_id', skip, 'text'))), limit)),
    dueFor: prepared((webhookId: string, now: number, limit: number) => claimable(dueRows(now).where('d.webhook_id', '=', webhookId), limit)),
    // Guarded by `state = 'pending'` although the claim's transaction already excludes other claimants:
    // RETURNING says which rows this instance holds, whatever the store does underneath.
    markClaimed: prepared((seqs: ListParam<number>, until: number, now: number) =>
      db
        .updateTable('webhook_deliveries')
        .set({ state: 'sending', claimed_by: me, claim_expires_at: until, updated_at: now })
        .where(oneOf(dialect, 'seq', seqs, 'bigint'))
        .where('state', '=', PENDING)
        .returning('seq'),
    ),
    renew: prepared((until: number) => db.updateTable('webhook_deliveries').set({ claim_expires_at: until }).where('state', '=', SENDING).where('claimed_by', '=', me)),
    release: prepared((seqs: ListParam<number>, now: number) =>
      db
        .updateTable('webhook_deliveries')
        .set({ state: 'pending', claimed_by: null, claim_expires_at: null, updated_at: now })
        .where(oneOf(dialect, 'seq', seqs, 'bigint'))
        .where('state', '=', SENDING)
        .where('claimed_by', '=', me),
    ),
    // Claims of instances that are gone (or of nobody: rows from before SQLite migration 016), and claims
    // whose lease ran out, go back to pending. Only `sending` rows are walked (partial index): at most the
    // instances' in-flight windows.
    releaseAbandoned: prepared((wallNow: number) =>
      db
        .updateTable('webhook_deliveries')
        .set({ state: 'pending', claimed_by: null, claim_expires_at: null, updated_at: wallNow })
        .where('state', '=', SENDING)
        .where((eb) =>
          eb.or([
            eb('claimed_by', 'is', null),
            eb('claim_expires_at', 'is', null),
            eb('claim_expires_at', '<', wallNow),
            eb.not(eb.exists(eb.selectFrom('gateway_instances as i').select(sql.lit(1).as('one')).whereRef('i.id', '=', 'webhook_deliveries.claimed_by'))),
          ]),
        ),
    ),
  };
}

/** The port on any runner: every answer after its round trip. */
export function createWebhookDeliveryQueue(runner: SqlRunner, box: SecretBox, claimant: DeliveryClaimant): WebhookDeliveryQueue {
  const p = deliveryQueuePrograms(runner.dialect, box, claimant);
  return {
    releaseAbandoned: () => runner.read(p.releaseAbandoned()),
    renewClaims: () => runner.read(p.renewClaims()),
    // Idle polls (every poll_interval_ms on every instance) open no transaction (on SQLite: take no write lock).
    claimDue: async (now, limit, skip, pick) => ((await runner.read(p.anyDue(now))) ? runner.write(p.claimDue(now, limit, skip, pick)) : { claimed: [], seen: 0 }),
    claimDueFor: (webhookId, now, limit) => runner.write(p.claimDueFor(webhookId, now, limit)),
    recordResults: (results, now) => runner.write(p.recordResults(results, now)),
  };
}

/** The dispatcher's store on SQLite: every answer synchronous. */
export interface SqliteDispatchStore extends DispatchStore {
  releaseAbandoned(): number;
  renewClaims(): number;
  claimDue(now: number, limit: number, skipWebhooks: readonly string[], pick: PickClaims): Claimed;
  claimDueFor(webhookId: string, now: number, limit: number): DueDelivery[];
  recordResults(results: readonly DeliveryResult[], now: number): void;
}

/** The same programs on a SQLite connection, synchronously (the dispatcher's own connection). */
export function createSqliteDispatchStore(db: Db, box: SecretBox, claimant: DeliveryClaimant): SqliteDispatchStore {
  const runner = createSqliteRunner(db);
  const p = deliveryQueuePrograms('sqlite', box, claimant);
  return {
    releaseAbandoned: () => runner.readSync(p.releaseAbandoned()),
    renewClaims: () => runner.readSync(p.renewClaims()),
    claimDue: (now, limit, skip, pick) => (runner.readSync(p.anyDue(now)) ? runner.writeSync(p.claimDue(now, limit, skip, pick)) : { claimed: [], seen: 0 }),
    claimDueFor: (webhookId, now, limit) => runner.writeSync(p.claimDueFor(webhookId, now, limit)),
    recordResults: (results, now) => runner.writeSync(p.recordResults(results, now)),
  };
}
