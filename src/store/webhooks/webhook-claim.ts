/**
 * Where the delivery queue's dialects differ (the rest is webhook-delivery-queue.ts, written once):
 * - The claim. SQLite: one writer at a time (the claim runs in an IMMEDIATE transaction), so of two
 *   instances claiming at once the second sees the first's rows as `sending` and takes others. PostgreSQL:
 *   the candidates are read `FOR UPDATE OF d SKIP LOCKED`, so a replica claiming at the same moment skips
 *   the rows locked by the other instead of waiting for them, and PostgreSQL re-checks a row's state after
 *   a wait, so a row another replica just marked `sending` is never taken twice.
 * - The outcomes of a batch of attempts. PostgreSQL: one statement over unnest'ed arrays (one round trip
 *   for the batch). SQLite: one prepared statement a row (no round trip; the cheapest there).
 * Both: an outcome is written only while this instance still holds the claim.
 */
import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import type { DeliveryResult } from '../../core/webhooks/delivery.js';
import { prepared, rawQuery, run, type SqlDialect, type SqlProgram } from '../sql/sql-program.js';
import type { WebhooksTables } from './webhooks-tables.js';

type Attempted = Extract<DeliveryResult, { kind: 'attempted' }>;

/** The candidates' query, locked for the claim where the dialect needs it. */
export function lockedForClaim<DB, TB extends keyof DB, O>(dialect: SqlDialect, query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O> {
  return dialect === 'postgres' ? query.modifyEnd(sql`for update of d skip locked`) : query;
}

/** Writes the attempts' outcomes of rows `me` still holds: a row whose claim was given away keeps the new claimant's. */
export function outcomeWriter(db: Kysely<WebhooksTables>, dialect: SqlDialect, me: string): (attempted: readonly Attempted[]) => SqlProgram<void> {
  if (dialect === 'postgres') {
    return function* (attempted) {
      yield* run(
        rawQuery(
          sql`UPDATE webhook_deliveries d SET state = r.state, attempt_count = r.attempt_count, next_attempt_at = r.next_attempt_at,
                http_status = r.http_status, response_body = r.response_body, error_message = r.error_message, updated_at = r.at,
                claimed_by = NULL, claim_expires_at = NULL
              FROM unnest(${attempted.map((r) => r.seq)}::bigint[], ${attempted.map((r) => r.state)}::text[], ${attempted.map((r) => r.attemptCount)}::int[],
                ${attempted.map((r) => r.nextAttemptAt)}::bigint[], ${attempted.map((r) => r.outcome.httpStatus)}::int[],
                ${attempted.map((r) => r.outcome.responseBody)}::text[], ${attempted.map((r) => r.outcome.errorMessage)}::text[], ${attempted.map((r) => r.at)}::bigint[])
                AS r(seq, state, attempt_count, next_attempt_at, http_status, response_body, error_message, at)
              WHERE d.seq = r.seq AND d.state = 'sending' AND d.claimed_by = ${me}`,
          db,
        ),
      );
    };
  }
  const recordOne = prepared((seq: number, state: Attempted['state'], attemptCount: number, nextAttemptAt: number | null, httpStatus: number | null, responseBody: string | null, errorMessage: string | null, at: number) =>
    db
      .updateTable('webhook_deliveries')
      .set({ state, attempt_count: attemptCount, next_attempt_at: nextAttemptAt, http_status: httpStatus, response_body: responseBody, error_message: errorMessage, updated_at: at, claimed_by: null, claim_expires_at: null })
      .where('seq', '=', seq)
      .where('state', '=', sql.lit('sending'))
      .where('claimed_by', '=', me),
  );
  return function* (attempted) {
    for (const r of attempted) yield* run(recordOne(r.seq, r.state, r.attemptCount, r.nextAttemptAt, r.outcome.httpStatus, r.outcome.responseBody, r.outcome.errorMessage, r.at));
  };
}
