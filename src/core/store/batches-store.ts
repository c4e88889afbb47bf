/**
 * The batches aggregate's storage port (issues 12 and 14): batch rows, their lines, and the claims that
 * make a line run at most once, across every replica sharing the store. SQLite
 * (store/sqlite/batches-store.ts over store/batches-repo.ts) and PostgreSQL
 * (store/postgres/batches-store.ts) implement it; test/contract/batches-store-contract.ts runs both.
 *
 * Every state change that ends a batch writes its webhook event in the same transaction (SPEC Webhooks:
 * batch.completed / batch.failed / batch.cancelled), so an event is never lost nor sent for a change that
 * did not commit.
 */
import type { ParsedLine } from '../batches/batch-lines.js';
import type { BatchStatus, RequestCounts } from '../batches/batch-machine.js';
import type { ClaimedLine, NothingReady } from '../batches/batch-scheduler.js';

export interface BatchRow {
  readonly seq: number;
  readonly id: string;
  readonly project_id: string;
  readonly key_id: string;
  readonly workspace_named: string | null;
  readonly workspace_named_by: string;
  readonly endpoint: string;
  readonly input_file_id: string;
  readonly completion_window: string;
  readonly status: BatchStatus;
  readonly metadata: string | null;
  readonly errors: string | null;
  readonly output_file_id: string | null;
  readonly error_file_id: string | null;
  readonly created_at: number;
  readonly expires_at: number;
  readonly in_progress_at: number | null;
  readonly finalizing_at: number | null;
  readonly completed_at: number | null;
  readonly failed_at: number | null;
  readonly expired_at: number | null;
  readonly cancelling_at: number | null;
  readonly cancelled_at: number | null;
}

export type NewBatch = Pick<BatchRow, 'id' | 'project_id' | 'key_id' | 'workspace_named' | 'workspace_named_by' | 'endpoint' | 'input_file_id' | 'completion_window' | 'metadata' | 'created_at' | 'expires_at'>;

export interface LineRow {
  readonly idx: number;
  readonly custom_id: string | null;
  readonly body: string | null;
  readonly state: 'pending' | 'running' | 'done';
  readonly status_code: number | null;
  readonly request_id: string | null;
  readonly response: string | null;
  readonly error_code: string | null;
  readonly error_message: string | null;
}

/** A line's recorded outcome: an HTTP answer (model or gateway error), or an error with no answer. */
export type LineOutcome =
  | { readonly kind: 'answered'; readonly statusCode: number; readonly requestId: string; readonly body: string }
  | { readonly kind: 'error'; readonly code: string; readonly message: string };

export interface BatchEvent {
  readonly type: 'batch.completed' | 'batch.failed' | 'batch.cancelled';
  readonly data: Record<string, unknown>;
}

/** What a move writes with the new status, in its transaction. */
export interface MoveExtras {
  /** The event of the new state, from the row as moved and its line counts. */
  readonly event?: (row: BatchRow, counts: RequestCounts) => BatchEvent | null;
  /** The output and error files (finalization). */
  readonly files?: { readonly output: string | null; readonly error: string | null };
}

export type LineCounts = RequestCounts & { readonly pending: number; readonly running: number };

export interface BatchesStore {
  insert(batch: NewBatch): Promise<void>;
  get(id: string): Promise<BatchRow | null>;
  /** Newest first; `beforeSeq` is the cursor (the `after` batch's seq), Infinity for the first page. */
  page(projectId: string, beforeSeq: number, limit: number): Promise<BatchRow[]>;
  /** Batches not yet in a terminal state, oldest first. */
  live(): Promise<BatchRow[]>;
  /** Whether any line is still waiting, or running: cheap, for deciding whether a batch can move on. */
  activity(id: string): Promise<{ pending: boolean; running: boolean }>;
  counts(id: string): Promise<LineCounts>;
  line(id: string, idx: number): Promise<LineRow | null>;
  doneLines(id: string): Promise<LineRow[]>;
  /** validating -> in_progress with every line (invalid ones done at once). False: no longer validating; nothing stored. */
  validated(id: string, lines: readonly ParsedLine[], now: number): Promise<boolean>;
  /**
   * Claims the oldest batch's next ready line for this instance (marked running, committed) or says how
   * long until one is ready. Concurrent claims, from any replica, never return the same line.
   */
  claim(now: number): Promise<ClaimedLine | NothingReady>;
  settle(id: string, idx: number, outcome: LineOutcome): Promise<void>;
  defer(id: string, idx: number, notBefore: number): Promise<void>;
  /** The resume rule (at most once): lines running for instances that are gone are failed, never re-run. */
  interruptRunning(message: string): Promise<number>;
  /** Moves a batch on, with `extras` in the same transaction. False: the batch was not in `from`. */
  move(id: string, from: readonly BatchStatus[], to: BatchStatus, now: number, extras?: MoveExtras): Promise<boolean>;
  setErrors(id: string, errors: unknown): Promise<void>;
  expirePending(id: string, message: string): Promise<number>;
}
