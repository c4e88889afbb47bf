/**
 * The webhooks port on PostgreSQL (tables: migrations/003-webhooks.ts); its endpoints are the programs
 * written once for both backends (webhooks/webhook-endpoints-store.ts). Replicas share the queue: a due
 * delivery is claimed by one of them with `FOR UPDATE OF d SKIP LOCKED` (a replica claiming at the same
 * moment skips the rows locked by the other instead of waiting for them), marked `sending` with the
 * claimant's lease in the same transaction. Claims of replicas that left `gateway_instances`, or whose
 * lease ran out, go back to `pending` (releaseAbandoned), as in SQLite (store/webhook-deliveries-repo.ts).
 */
import type pg from 'pg';
import type {
  DeliveryClaimant,
  OutboxEvent,
  WebhookDeliveryQueue,
  WebhookRetentionResult,
  WebhooksStore,
} from '../../core/store/webhooks-store.js';
import type { DeliveryResult, DueDelivery } from '../../core/webhooks/delivery.js';
import { envelopeBody } from '../../core/webhooks/envelope.js';
import { isDeliverable, type EventType } from '../../core/webhooks/event-types.js';
import { webhookIds } from '../../core/webhooks/ids.js';
import type { SealedValue, SecretBox } from '../secret-box.js';
import { createPostgresRunner } from '../sql/postgres-runner.js';
import { dueDeliveryReader, type DueRow } from '../webhook-rows.js';
import { createWebhookEndpointsStore } from '../webhooks/webhook-endpoints-store.js';
import type { PgStore } from './pg-store.js';

const PRUNE_BATCH = 500;

/** The change notice of new due deliveries: every replica's dispatcher looks at once instead of at its next poll. */
export const WEBHOOK_DELIVERIES_TOPIC = 'webhooks.deliveries';

/** The newest sealed signing secret, for the key check at start (secret-box.ts storedSealedValues). */
export async function newestSealedEndpoint(pool: pg.Pool): Promise<SealedValue[]> {
  const { rows } = await pool.query<SealedValue>('SELECT secret_sealed AS sealed, id AS associated FROM webhook_endpoints ORDER BY seq DESC LIMIT 1');
  return rows;
}

export function createPgWebhooksStore(store: PgStore, box: SecretBox): WebhooksStore {
  const { pool } = store;
  return {
    endpoints: createWebhookEndpointsStore({ runner: createPostgresRunner(store), box }),
    deliveryQueue: (claimant) => pgDeliveryQueue(store, box, claimant),
    async appendEvents(events) {
      if (events.length === 0) return 0;
      return store.transaction((client) => appendEventsIn(store, client, events));
    },
    async prune(now, retentionMs) {
      const cutoff = now - retentionMs;
      // Deliveries first: an event is kept while any delivery of it is.
      const deliveries = await drain(pool, `
        DELETE FROM webhook_deliveries WHERE seq IN (
          SELECT seq FROM webhook_deliveries WHERE state IN ('delivered', 'failed') AND updated_at < $1 ORDER BY seq LIMIT $2)`, cutoff);
      const events = await drain(pool, `
        DELETE FROM webhook_events WHERE seq IN (
          SELECT e.seq FROM webhook_events e
          WHERE e.created_at < $1 AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)
          ORDER BY e.seq LIMIT $2)`, cutoff);
      const result: WebhookRetentionResult = { deliveries, events };
      return result;
    },
  };
}

/** Short statements one after another, so no transaction holds many row locks for long. */
async function drain(pool: pg.Pool, sql: string, cutoff: number): Promise<number> {
  let total = 0;
  for (;;) {
    const n = (await pool.query(sql, [cutoff, PRUNE_BATCH])).rowCount ?? 0;
    total += n;
    if (n < PRUNE_BATCH) return total;
  }
}

/**
 * Appends events and their fan-out in the caller's transaction on `client` (the state change they describe
 * commits with them: the responses, files and batches stores), and tells every replica's dispatcher of new
 * due deliveries, a notice PostgreSQL sends only if that transaction commits. Returns the deliveries queued.
 */
export async function appendEventsIn(store: Pick<PgStore, 'notifyChange'>, client: pg.PoolClient, events: readonly OutboxEvent[]): Promise<number> {
  if (events.length === 0) return 0;
  const queued = await appendEvents(client, events);
  if (queued > 0) await store.notifyChange(client, WEBHOOK_DELIVERIES_TOPIC);
  return queued;
}

/** The event of `type`, enveloped at `at`; none for a reserved type (never delivered, as the SQLite outbox). */
export function eventsOf(projectId: string, type: EventType, data: Record<string, unknown>, at: number): OutboxEvent[] {
  if (!isDeliverable(type)) return [];
  const id = webhookIds.eventId();
  return [{ id, projectId, type, body: envelopeBody(id, type, at, data), createdAt: at }];
}

/** One event fanned out inside the caller's transaction (responses, files and batches state changes). */
export function emitEventIn(store: Pick<PgStore, 'notifyChange'>, client: pg.PoolClient, projectId: string, type: EventType, data: Record<string, unknown>, at: number): Promise<number> {
  return appendEventsIn(store, client, eventsOf(projectId, type, data, at));
}

/**
 * Events already stored (by id) are skipped with their fan-out, so a relay that appends an event again
 * queues nothing twice. An event no endpoint subscribes to is not kept: it would only wait for retention.
 */
async function appendEvents(client: pg.PoolClient, events: readonly OutboxEvent[]): Promise<number> {
  const { rows } = await client.query<{ n: number }>(
    `WITH ev AS (
       INSERT INTO webhook_events (id, project_id, type, body, created_at)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[])
       ON CONFLICT (id) DO NOTHING
       RETURNING id, project_id, type, created_at
     ), queued AS (
       INSERT INTO webhook_deliveries (id, webhook_id, event_id, event_type, state, attempt_count, next_attempt_at, created_at, updated_at)
       SELECT 'del_' || substr(md5(gen_random_uuid()::text), 1, 24), w.id, ev.id, ev.type, 'pending', 0, ev.created_at, ev.created_at, ev.created_at
       FROM ev JOIN webhook_endpoints w ON w.project_id = ev.project_id AND w.is_active AND ev.type = ANY(w.events)
       ORDER BY ev.created_at, w.seq
       RETURNING 1
     )
     SELECT count(*)::int AS n FROM queued`,
    [events.map((e) => e.id), events.map((e) => e.projectId), events.map((e) => e.type), events.map((e) => e.body), events.map((e) => e.createdAt)],
  );
  await client.query(
    'DELETE FROM webhook_events e WHERE e.id = ANY($1::text[]) AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)',
    [events.map((e) => e.id)],
  );
  return rows[0]?.n ?? 0;
}

function pgDeliveryQueue(store: PgStore, box: SecretBox, claimant: DeliveryClaimant): WebhookDeliveryQueue {
  const { pool } = store;
  const me = claimant.instanceId;
  // The lease is wall clock, never the injectable test clock the due times use.
  const until = (): number => Date.now() + claimant.leaseMs;
  const toDue = dueDeliveryReader(box);
  const DUE = `SELECT d.seq, d.id, d.webhook_id, d.attempt_count, w.url, w.secret_sealed, e.body
    FROM webhook_deliveries d
    JOIN webhook_endpoints w ON w.id = d.webhook_id
    JOIN webhook_events e ON e.id = d.event_id
    WHERE d.state = 'pending' AND d.next_attempt_at <= $1 AND w.is_active`;

  /** Selects under row locks (skipping rows another replica holds), lets `pick` choose, marks the chosen. */
  async function claim(sql: string, params: unknown[], now: number, pick: (candidates: DueDelivery[]) => DueDelivery[]): Promise<{ claimed: DueDelivery[]; seen: number }> {
    return store.transaction(async (client) => {
      const candidates = (await client.query<DueRow>(sql, params)).rows.map(toDue);
      const picked = pick(candidates);
      let won = new Set<number>();
      if (picked.length > 0) {
        const { rows } = await client.query<{ seq: number }>(
          `UPDATE webhook_deliveries SET state = 'sending', claimed_by = $2, claim_expires_at = $3, updated_at = $4
           WHERE seq = ANY($1::bigint[]) AND state = 'pending' RETURNING seq`,
          [picked.map((r) => r.seq), me, until(), now],
        );
        won = new Set(rows.map((r) => r.seq));
      }
      return { claimed: picked.filter((r) => won.has(r.seq)), seen: candidates.length };
    });
  }

  return {
    async releaseAbandoned() {
      const wall = Date.now();
      const result = await pool.query(
        `UPDATE webhook_deliveries SET state = 'pending', claimed_by = NULL, claim_expires_at = NULL, updated_at = $1
         WHERE state = 'sending' AND (claimed_by IS NULL OR claim_expires_at IS NULL OR claim_expires_at < $1
           OR NOT EXISTS (SELECT 1 FROM gateway_instances i WHERE i.id = webhook_deliveries.claimed_by))`,
        [wall],
      );
      return result.rowCount ?? 0;
    },
    async renewClaims() {
      const result = await pool.query("UPDATE webhook_deliveries SET claim_expires_at = $1 WHERE state = 'sending' AND claimed_by = $2", [until(), me]);
      return result.rowCount ?? 0;
    },
    async claimDue(now, limit, skip, pick) {
      // Idle polls (every poll_interval_ms on every replica) open no transaction: a plain read first.
      const any = await pool.query("SELECT 1 FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= $1 LIMIT 1", [now]);
      if (any.rowCount === 0) return { claimed: [], seen: 0 };
      return claim(
        `${DUE} AND NOT (d.webhook_id = ANY($2::text[])) ORDER BY d.next_attempt_at, d.seq LIMIT $3 FOR UPDATE OF d SKIP LOCKED`,
        [now, [...skip], limit],
        now,
        pick,
      );
    },
    async claimDueFor(webhookId, now, limit) {
      const { claimed } = await claim(
        `${DUE} AND d.webhook_id = $2 ORDER BY d.next_attempt_at, d.seq LIMIT $3 FOR UPDATE OF d SKIP LOCKED`,
        [now, webhookId, limit],
        now,
        (candidates) => candidates,
      );
      return claimed;
    },
    async recordResults(results: readonly DeliveryResult[], now: number) {
      const released = results.filter((r) => r.kind === 'released').map((r) => r.seq);
      const attempted = results.flatMap((r) => (r.kind === 'attempted' ? [r] : []));
      // Outcomes are the claimant's only: a row whose claim was given away keeps the new claimant's.
      if (attempted.length > 0) {
        await pool.query(
          `UPDATE webhook_deliveries d SET state = r.state, attempt_count = r.attempt_count, next_attempt_at = r.next_attempt_at,
             http_status = r.http_status, response_body = r.response_body, error_message = r.error_message, updated_at = r.at,
             claimed_by = NULL, claim_expires_at = NULL
           FROM unnest($1::bigint[], $2::text[], $3::int[], $4::bigint[], $5::int[], $6::text[], $7::text[], $8::bigint[])
             AS r(seq, state, attempt_count, next_attempt_at, http_status, response_body, error_message, at)
           WHERE d.seq = r.seq AND d.state = 'sending' AND d.claimed_by = $9`,
          [
            attempted.map((r) => r.seq),
            attempted.map((r) => r.state),
            attempted.map((r) => r.attemptCount),
            attempted.map((r) => r.nextAttemptAt),
            attempted.map((r) => r.outcome.httpStatus),
            attempted.map((r) => r.outcome.responseBody),
            attempted.map((r) => r.outcome.errorMessage),
            attempted.map((r) => r.at),
            me,
          ],
        );
      }
      if (released.length > 0) {
        await pool.query(
          "UPDATE webhook_deliveries SET state = 'pending', claimed_by = NULL, claim_expires_at = NULL, updated_at = $1 WHERE seq = ANY($2::bigint[]) AND state = 'sending' AND claimed_by = $3",
          [now, released, me],
        );
      }
    },
  };
}
