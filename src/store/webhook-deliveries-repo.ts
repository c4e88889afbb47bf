/**
 * Delivery records: the dispatcher's SQL (select due, claim, record outcomes) and the deliveries listing.
 * The dispatcher may run this on its own connection opened with synchronous=NORMAL: in WAL mode such a
 * commit survives a process crash; a power loss can roll back the last outcomes, and those deliveries
 * are then sent again, which at-least-once allows. Every call is one short statement or transaction.
 */
import type { DispatchStore } from '../core/webhooks/dispatcher.js';
import type { DeliveryRecord, DeliveryResult, DeliveryState, DueDelivery, Page } from '../core/webhooks/delivery.js';
import { writeTransaction, type Db } from './db.js';
import type { SecretBox } from './secret-box.js';

interface DueRow {
  seq: number;
  id: string;
  webhook_id: string;
  attempt_count: number;
  url: string;
  secret_sealed: string;
  body: string;
}

interface DeliveryRow {
  seq: number;
  id: string;
  webhook_id: string;
  event_type: string;
  state: DeliveryState;
  attempt_count: number;
  http_status: number | null;
  response_body: string | null;
  created_at: number;
}

function toDelivery(r: DeliveryRow): DeliveryRecord {
  return {
    id: r.id,
    webhookId: r.webhook_id,
    eventType: r.event_type,
    state: r.state,
    attemptCount: r.attempt_count,
    httpStatus: r.http_status,
    responseBody: r.response_body,
    createdAt: r.created_at,
  };
}

export function createDeliveriesRepo(db: Db, box: SecretBox): DispatchStore {
  const reset = db.prepare("UPDATE webhook_deliveries SET state = 'pending' WHERE state = 'sending'");
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
  const claim = db.prepare("UPDATE webhook_deliveries SET state = 'sending', updated_at = ? WHERE seq = ? AND state = 'pending'");
  const recordAttempt = db.prepare(`
    UPDATE webhook_deliveries SET state = @state, attempt_count = @attemptCount, next_attempt_at = @nextAttemptAt,
      http_status = @httpStatus, response_body = @responseBody, error_message = @errorMessage, updated_at = @at
    WHERE seq = @seq AND state = 'sending'`);
  const releaseOne = db.prepare("UPDATE webhook_deliveries SET state = 'pending', updated_at = ? WHERE seq = ? AND state = 'sending'");
  const claimAll = writeTransaction(db, (seqs: readonly number[], now: number) => {
    for (const seq of seqs) claim.run(now, seq);
  });
  const recordAll = writeTransaction(db, (results: readonly DeliveryResult[], now: number) => {
    for (const r of results) {
      if (r.kind === 'released') {
        releaseOne.run(now, r.seq);
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
      });
    }
  });

  // Opening a secret is an AES-GCM decrypt: cheap, but done once per endpoint and sealed value.
  const secrets = new Map<string, { sealed: string; plain: string | null }>();
  function openSecret(webhookId: string, sealed: string): string | null {
    const cached = secrets.get(webhookId);
    if (cached?.sealed === sealed) return cached.plain;
    let plain: string | null;
    try {
      plain = box.open(sealed, webhookId);
    } catch {
      plain = null;
    }
    if (secrets.size >= 10_000) secrets.clear();
    secrets.set(webhookId, { sealed, plain });
    return plain;
  }
  const toDue = (r: DueRow): DueDelivery => ({
    seq: r.seq,
    id: r.id,
    webhookId: r.webhook_id,
    url: r.url,
    secret: openSecret(r.webhook_id, r.secret_sealed),
    body: r.body,
    attemptCount: r.attempt_count,
  });

  return {
    resetInFlight: () => reset.run().changes,
    selectDue: (now, limit, skipWebhooks) => due.all({ now, limit, skip: JSON.stringify(skipWebhooks) }).map(toDue),
    selectDueFor: (webhookId, now, limit) => dueFor.all({ webhookId, now, limit }).map(toDue),
    markSending: (seqs, now) => claimAll(seqs, now),
    recordResults: (results, now) => recordAll(results, now),
  };
}

export type DeliveriesList = (webhookId: string, limit: number, after: string | null) => Page<DeliveryRecord> | null;

/** Newest first; `after` is a delivery id of the previous page. null when `after` names no delivery of the webhook. */
export function createDeliveriesList(db: Db): DeliveriesList {
  const columns = 'seq, id, webhook_id, event_type, state, attempt_count, http_status, response_body, created_at';
  const cursor = db.prepare<[string, string], { seq: number }>('SELECT seq FROM webhook_deliveries WHERE webhook_id = ? AND id = ?');
  const page = db.prepare<[string, number, number], DeliveryRow>(
    `SELECT ${columns} FROM webhook_deliveries WHERE webhook_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`,
  );
  return (webhookId, limit, after) => {
    let before = Number.MAX_SAFE_INTEGER;
    if (after !== null) {
      const row = cursor.get(webhookId, after);
      if (!row) return null;
      before = row.seq;
    }
    const rows = page.all(webhookId, before, limit + 1);
    return { items: rows.slice(0, limit).map(toDelivery), hasMore: rows.length > limit };
  };
}
