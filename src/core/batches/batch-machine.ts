/**
 * A batch's lifecycle (OpenAI's Batch object, docs/decisions.md "Batches"):
 *
 *   validating -> in_progress -> finalizing -> completed
 *   validating -> failed                       (the input file is unusable: unreadable, empty, too long)
 *   in_progress -> finalizing -> expired        (the completion window ran out; unrun lines are failed "expired")
 *   validating | in_progress -> cancelling -> cancelled
 *
 * Every transition stamps its `*_at` time. Pure: the repository applies what `transition` allows.
 */

export type BatchStatus = 'validating' | 'in_progress' | 'finalizing' | 'completed' | 'failed' | 'expired' | 'cancelling' | 'cancelled';

const NEXT: Readonly<Record<BatchStatus, readonly BatchStatus[]>> = {
  validating: ['in_progress', 'failed', 'cancelling'],
  in_progress: ['finalizing', 'cancelling'],
  finalizing: ['completed', 'expired'],
  // A cancel that came while validating has no lines to wait for.
  cancelling: ['cancelled'],
  completed: [],
  failed: [],
  expired: [],
  cancelled: [],
};

export function canMove(from: BatchStatus, to: BatchStatus): boolean {
  return NEXT[from].includes(to);
}

export interface RequestCounts {
  readonly total: number;
  readonly completed: number;
  readonly failed: number;
}

/** The webhook event a terminal state emits (SPEC Webhooks: batch.completed, batch.failed, batch.cancelled). */
export function eventOf(status: BatchStatus): 'batch.completed' | 'batch.failed' | 'batch.cancelled' | null {
  if (status === 'completed') return 'batch.completed';
  // An expired batch did not finish its work: subscribers hear it as failed (the payload says expired).
  if (status === 'failed' || status === 'expired') return 'batch.failed';
  if (status === 'cancelled') return 'batch.cancelled';
  return null;
}

/** `completion_window`: OpenAI accepts only "24h". */
export const COMPLETION_WINDOWS: Readonly<Record<string, number>> = { '24h': 24 * 60 * 60 * 1000 };
