/** What an attempt's outcome means for its delivery record (SPEC "Webhook delivery" states). */
import type { AttemptOutcome, DeliveryResult, DueDelivery } from './delivery.js';
import { afterFailure } from './retry-schedule.js';

export function resultOf(row: DueDelivery, outcome: AttemptOutcome, at: number, schedule: readonly number[]): DeliveryResult & { kind: 'attempted' } {
  const attemptCount = row.attemptCount + 1;
  if (outcome.ok) return { seq: row.seq, kind: 'attempted', state: 'delivered', attemptCount, nextAttemptAt: null, outcome, at };
  const next = afterFailure(attemptCount, at, schedule);
  return {
    seq: row.seq,
    kind: 'attempted',
    state: next.state,
    attemptCount,
    nextAttemptAt: next.state === 'pending' ? next.nextAttemptAt : null,
    outcome,
    at,
  };
}

export const SECRET_UNREADABLE: AttemptOutcome = {
  ok: false,
  httpStatus: null,
  responseBody: null,
  errorMessage: 'the signing secret cannot be read (was the secret key changed?)',
};
