/**
 * Delivery records: the dispatcher's SQL (claim due rows, keep and give back claims, record outcomes; the
 * deliveries listing and redelivery are webhooks/webhook-endpoints-store.ts). The dispatcher may run this on its own connection opened with synchronous=NORMAL:
 * in WAL mode such a commit survives a process crash; a power loss can roll back the last outcomes, and
 * those deliveries are then sent again, which at-least-once allows. Every call is one short statement or
 * transaction.
 *
 * Several instances share the store (issue 12): a row is claimed by one instance with a lease
 * (`claimed_by`, `claim_expires_at`, wall clock), and only the claimant writes its outcome. The claim reads
 * the candidates and marks them in one IMMEDIATE transaction, so of two instances claiming at once the
 * second sees the first's rows as `sending` and takes others: each due row is claimed by exactly one
 * instance. The claimant extends its claims at every heartbeat; a claim whose instance is no longer
 * registered (killed, then deleted by a sibling's sweep) or whose lease ran out (the instance hung) goes
 * back to `pending` and is claimed again, so a killed instance's deliveries are sent by another.
 *
 * On PostgreSQL the claim is the same transaction with row locks instead of the file lock:
 *   SELECT d.seq, ... FROM webhook_deliveries d JOIN ... WHERE d.state = 'pending' AND d.next_attempt_at <= $now
 *     ORDER BY d.next_attempt_at, d.seq LIMIT $n FOR UPDATE OF d SKIP LOCKED;
 *   UPDATE webhook_deliveries SET state = 'sending', claimed_by = $me, claim_expires_at = $until
 *     WHERE seq = ANY($picked) RETURNING seq;
 */
import type { DispatchStore } from '../core/webhooks/dispatcher.js';
import type { DeliveryResult, DueDelivery } from '../core/webhooks/delivery.js';
import { writeTransaction, type Db } from './db.js';
import type { SecretBox } from './secret-box.js';
import { dueDeliveryReader, type DueRow } from './webhook-rows.js';

/** Who claims: this instance (store/instances-registry.ts) and how long a claim holds without renewal. */
export interface Claimant {
  readonly instanceId: string;
  readonly leaseMs: number;
  /** Wall clock for the lease (never the injectable test clock the due times use). */
  readonly wallClock?: () => number;
}

/** The dispatcher's store on SQLite: every answer synchronous. */
export interface SqliteDispatchStore extends DispatchStore {
  releaseAbandoned(): number;
  renewClaims(): number;
  claimDue(now: number, limit: number, skipWebhooks: readonly string[], pick: (candidates: DueDelivery[]) => DueDelivery[]): { claimed: DueDelivery[]; seen: number };
  claimDueFor(webhookId: string, now: number, limit: number): DueDelivery[];
  recordResults(results: readonly DeliveryResult[], now: number): void;
}

export function createDeliveriesRepo(db: Db, box: SecretBox, claimant: Claimant): SqliteDispatchStore {
  const me = claimant.instanceId;
  const wall = claimant.wallClock ?? Date.now;
  const until = (): number => wall() + claimant.leaseMs;
  // Claims of instances that are gone (or of nobody: rows from before migration 016), and claims whose
  // lease ran out, go back to pending. Only `sending` rows are walked (partial index): at most the
  // instances' in-flight windows.
  const releaseAbandoned = db.prepare(`
    UPDATE webhook_deliveries SET state = 'pending', claimed_by = NULL, claim_expires_at = NULL, updated_at = @now
    WHERE state = 'sending'
      AND (claimed_by IS NULL OR claim_expires_at IS NULL OR claim_expires_at < @wall
        OR claimed_by NOT IN (SELECT id FROM gateway_instances))`);
  const renew = db.prepare("UPDATE webhook_deliveries SET claim_expires_at = ? WHERE state = 'sending' AND claimed_by = ?");
  const due = db.prepare<{ now: number; limit: number; skip: string }, DueRow>(`
    SELECT d.seq, d.id, d.webhook_id, d.attempt_count, w.url, w.secret_sealed, e.body
    FROM webhook_deliveries d
    JOIN webhook_endpoints w ON w.id = d.webhook_id
    JOIN webhook_events e ON e.id = d.event_id
    WHERE d.state = 'pending' AND d.next_attempt_at <= @now AND w.is_active = 1
      AND d.webhook_id NOT IN (SELECT value FROM json_each(@skip))
    ORDER BY d.next_attempt_at, d.seq
    LIMIT @limit`);
  const dueFor = db.prepare<{ webhookId: string; now: number; limit: number }, DueRow>(`
    SELECT d.seq, d.id, d.webhook_id, d.attempt_count, w.url, w.secret_sealed, e.body
    FROM webhook_deliveries d
    JOIN webhook_endpoints w ON w.id = d.webhook_id
    JOIN webhook_events e ON e.id = d.event_id
    WHERE d.webhook_id = @webhookId AND d.state = 'pending' AND d.next_attempt_at <= @now AND w.is_active = 1
    ORDER BY d.next_attempt_at, d.seq
    LIMIT @limit`);
  // Guarded by `state = 'pending'` although the transaction already excludes other claimants: RETURNING
  // says which rows this instance holds, whatever the store does underneath.
  const claim = db.prepare<{ seqs: string; me: string; until: number; now: number }, { seq: number }>(`
    UPDATE webhook_deliveries SET state = 'sending', claimed_by = @me, claim_expires_at = @until, updated_at = @now
    WHERE seq IN (SELECT value FROM json_each(@seqs)) AND state = 'pending'
    RETURNING seq`);
  // Outcomes are the claimant's only: a row whose claim was given away (this instance hung past its lease)
  // keeps the new claimant's outcome, and this attempt counts as a resend.
  const recordAttempt = db.prepare(`
    UPDATE webhook_deliveries SET state = @state, attempt_count = @attemptCount, next_attempt_at = @nextAttemptAt,
      http_status = @httpStatus, response_body = @responseBody, error_message = @errorMessage, updated_at = @at,
      claimed_by = NULL, claim_expires_at = NULL
    WHERE seq = @seq AND state = 'sending' AND claimed_by = @me`);
  const releaseOne = db.prepare(
    "UPDATE webhook_deliveries SET state = 'pending', claimed_by = NULL, claim_expires_at = NULL, updated_at = ? WHERE seq = ? AND state = 'sending' AND claimed_by = ?",
  );
  const claimRows = (rows: readonly DueDelivery[], now: number): DueDelivery[] => {
    if (rows.length === 0) return [];
    const won = new Set(claim.all({ seqs: JSON.stringify(rows.map((r) => r.seq)), me, until: until(), now }).map((r) => r.seq));
    return rows.filter((r) => won.has(r.seq));
  };
  // Idle polls (every poll_interval_ms on every instance) must not take the write lock: a read first.
  const anyDue = db.prepare<{ now: number }, { one: number }>(`
    SELECT 1 AS one FROM webhook_deliveries d WHERE d.state = 'pending' AND d.next_attempt_at <= @now LIMIT 1`);
  const claimDueTx = writeTransaction(db, (now: number, limit: number, skip: readonly string[], pick: (candidates: DueDelivery[]) => DueDelivery[]) => {
    const candidates = due.all({ now, limit, skip: JSON.stringify(skip) }).map(toDue);
    return { claimed: claimRows(pick(candidates), now), seen: candidates.length };
  });
  const claimDue = (now: number, limit: number, skip: readonly string[], pick: (candidates: DueDelivery[]) => DueDelivery[]) =>
    anyDue.get({ now }) === undefined ? { claimed: [], seen: 0 } : claimDueTx(now, limit, skip, pick);
  const claimDueFor = writeTransaction(db, (webhookId: string, now: number, limit: number) => claimRows(dueFor.all({ webhookId, now, limit }).map(toDue), now));
  const recordAll = writeTransaction(db, (results: readonly DeliveryResult[], now: number) => {
    for (const r of results) {
      if (r.kind === 'released') {
        releaseOne.run(now, r.seq, me);
        continue;
      }
      recordAttempt.run({
        seq: r.seq,
        state: r.state,
        attemptCount: r.attemptCount,
        nextAttemptAt: r.nextAttemptAt,
        httpStatus: r.outcome.httpStatus,
        responseBody: r.outcome.responseBody,
        errorMessage: r.outcome.errorMessage,
        at: r.at,
        me,
      });
    }
  });

  const toDue = dueDeliveryReader(box);

  return {
    releaseAbandoned: () => releaseAbandoned.run({ now: wall(), wall: wall() }).changes,
    renewClaims: () => renew.run(until(), me).changes,
    claimDue: (now, limit, skip, pick) => claimDue(now, limit, skip, pick),
    claimDueFor: (webhookId, now, limit) => claimDueFor(webhookId, now, limit),
    recordResults: (results, now) => recordAll(results, now),
  };
}
