/**
 * The batches' tables (migration 011): batch rows, their lines, and the claims that make a line run at
 * most once. Every state change that ends a batch writes its webhook event in the same transaction
 * (SPEC Webhooks: batch.completed / batch.failed / batch.cancelled), so an event is never lost nor sent
 * for a change that did not commit.
 */
import type { ParsedLine } from '../core/batches/batch-lines.js';
import type { BatchEvent, BatchRow, LineOutcome, LineRow, MoveExtras, NewBatch } from '../core/store/batches-store.js';
import { canMove, type BatchStatus, type RequestCounts } from '../core/batches/batch-machine.js';
import type { ClaimedLine, NothingReady } from '../core/batches/batch-scheduler.js';
import type { EventOutbox } from '../core/webhooks/outbox.js';
import { writeTransaction, type Db } from './db.js';

export type { BatchEvent, BatchRow, LineOutcome, LineRow, NewBatch };

const LIVE = "('validating', 'in_progress', 'finalizing', 'cancelling')";

/** `owner`: this gateway instance's id; null (single-instance unit tests) writes rows any recovery may take. */
export function createBatchesRepo(db: Db, outbox: EventOutbox, owner: string | null = null) {
  const insertBatch = db.prepare(`INSERT INTO batches (id, project_id, key_id, workspace_named, workspace_named_by, endpoint, input_file_id, completion_window, status, metadata, created_at, expires_at)
    VALUES (@id, @project_id, @key_id, @workspace_named, @workspace_named_by, @endpoint, @input_file_id, @completion_window, 'validating', @metadata, @created_at, @expires_at)`);
  const byId = db.prepare<[string], BatchRow>('SELECT * FROM batches WHERE id = ?');
  const page = db.prepare<[string, number, number], BatchRow>('SELECT * FROM batches WHERE project_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?');
  const live = db.prepare<[], BatchRow>(`SELECT * FROM batches WHERE status IN ${LIVE} ORDER BY seq`);
  const insertLine = db.prepare(`INSERT INTO batch_lines (batch_id, idx, custom_id, body, state, error_code, error_message) VALUES (?, ?, ?, ?, ?, ?, ?)`);
  const setStatus = (column: string) => db.prepare(`UPDATE batches SET status = ?, ${column} = ? WHERE id = ?`);
  const statusStmts = new Map<string, ReturnType<typeof setStatus>>();
  const moveTo = (id: string, to: BatchStatus, now: number): void => {
    let stmt = statusStmts.get(to);
    if (!stmt) statusStmts.set(to, (stmt = setStatus(`${to}_at`)));
    stmt.run(to, now, id);
  };
  // The oldest batch's first ready line: batches run in creation order, lines in file order. A batch past
  // its window starts no line (its pending lines are failed batch_expired when it is finalized).
  const nextReady = db.prepare<{ now: number }, { batch_id: string; idx: number }>(`
    SELECT l.batch_id, l.idx FROM batches b JOIN batch_lines l ON l.batch_id = b.id
    WHERE b.status = 'in_progress' AND b.expires_at > @now AND l.state = 'pending' AND l.not_before <= @now ORDER BY b.seq, l.idx LIMIT 1`);
  const nextDeferred = db.prepare<{ now: number }, { at: number | null }>(`
    SELECT min(l.not_before) AS at FROM batches b JOIN batch_lines l ON l.batch_id = b.id
    WHERE b.status = 'in_progress' AND b.expires_at > @now AND l.state = 'pending'`);
  // A running line records the instance that sends it (migration 016): only that instance's death fails it.
  const markRunning = db.prepare("UPDATE batch_lines SET state = 'running', owner_instance = ? WHERE batch_id = ? AND idx = ? AND state = 'pending'");
  const line = db.prepare<[string, number], LineRow>('SELECT * FROM batch_lines WHERE batch_id = ? AND idx = ?');
  const settleAnswered = db.prepare("UPDATE batch_lines SET state = 'done', status_code = ?, request_id = ?, response = ? WHERE batch_id = ? AND idx = ?");
  const settleError = db.prepare("UPDATE batch_lines SET state = 'done', error_code = ?, error_message = ? WHERE batch_id = ? AND idx = ?");
  const deferLine = db.prepare("UPDATE batch_lines SET state = 'pending', not_before = ? WHERE batch_id = ? AND idx = ?");
  const counts = db.prepare<[string], { total: number; completed: number; failed: number; pending: number; running: number }>(`
    SELECT count(*) AS total,
      coalesce(sum(state = 'done' AND status_code BETWEEN 200 AND 299), 0) AS completed,
      coalesce(sum(state = 'done' AND (status_code IS NULL OR status_code NOT BETWEEN 200 AND 299)), 0) AS failed,
      coalesce(sum(state = 'pending'), 0) AS pending,
      coalesce(sum(state = 'running'), 0) AS running
    FROM batch_lines WHERE batch_id = ?`);
  // Through the partial indexes: after every line the system asks whether its batch is done, and a full
  // count there made a batch cost the square of its line count (bench/RESULTS.md "openai-surface").
  const anyPending = db.prepare<[string], { one: number }>("SELECT 1 AS one FROM batch_lines WHERE batch_id = ? AND state = 'pending' LIMIT 1");
  const anyRunning = db.prepare<[string], { one: number }>("SELECT 1 AS one FROM batch_lines WHERE batch_id = ? AND state = 'running' LIMIT 1");
  const doneLines = db.prepare<[string], LineRow>("SELECT * FROM batch_lines WHERE batch_id = ? AND state = 'done' ORDER BY idx");
  const interrupt = db.prepare(`UPDATE batch_lines SET state = 'done', error_code = 'interrupted', error_message = ?
    WHERE state = 'running' AND (owner_instance IS NULL OR owner_instance NOT IN (SELECT id FROM gateway_instances))`);
  const expirePending = db.prepare("UPDATE batch_lines SET state = 'done', error_code = 'batch_expired', error_message = ? WHERE batch_id = ? AND state = 'pending'");
  const setFiles = db.prepare('UPDATE batches SET output_file_id = ?, error_file_id = ? WHERE id = ?');
  const setErrors = db.prepare('UPDATE batches SET errors = ? WHERE id = ?');

  return {
    insert: (b: NewBatch): void => void insertBatch.run(b),
    get: (id: string): BatchRow | null => byId.get(id) ?? null,
    /** Newest first; `beforeSeq` is the cursor (the `after` batch's seq), Infinity for the first page. */
    page: (projectId: string, beforeSeq: number, limit: number): BatchRow[] => page.all(projectId, Number.isFinite(beforeSeq) ? beforeSeq : Number.MAX_SAFE_INTEGER, limit),
    live: (): BatchRow[] => live.all(),
    /** Whether any line is still waiting, or running: cheap, for deciding whether a batch can move on. */
    activity(id: string): { pending: boolean; running: boolean } {
      return { pending: anyPending.get(id) !== undefined, running: anyRunning.get(id) !== undefined };
    },
    counts(id: string): RequestCounts & { pending: number; running: number } {
      return counts.get(id) ?? { total: 0, completed: 0, failed: 0, pending: 0, running: 0 };
    },
    line: (id: string, idx: number): LineRow | null => line.get(id, idx) ?? null,
    doneLines: (id: string): LineRow[] => doneLines.all(id),

    /** validating -> in_progress with every line: invalid ones are done at once (error file). */
    validated: writeTransaction(db, (id: string, lines: readonly ParsedLine[], now: number): boolean => {
      // Cancelled while the file was read: nothing is stored, nothing runs.
      if (byId.get(id)?.status !== 'validating') return false;
      lines.forEach((l, idx) => {
        if (l.ok) insertLine.run(id, idx, l.line.customId, l.line.body.toString('utf8'), 'pending', null, null);
        else insertLine.run(id, idx, l.error.customId, null, 'done', l.error.code, l.error.message);
      });
      moveTo(id, 'in_progress', now);
      return true;
    }),

    /** Claims the next ready line (marked running, committed) or says how long until one is ready. */
    claim: writeTransaction(db, (now: number): ClaimedLine | NothingReady => {
      const next = nextReady.get({ now });
      if (!next) {
        const at = nextDeferred.get({ now })?.at ?? null;
        return { waitMs: at === null ? null : Math.max(1, at - now) };
      }
      markRunning.run(owner, next.batch_id, next.idx);
      return { batchId: next.batch_id, index: next.idx };
    }),

    settle: writeTransaction(db, (id: string, idx: number, outcome: LineOutcome): void => {
      if (outcome.kind === 'answered') settleAnswered.run(outcome.statusCode, outcome.requestId, outcome.body, id, idx);
      else settleError.run(outcome.code, outcome.message, id, idx);
    }),

    defer: (id: string, idx: number, notBefore: number): void => void deferLine.run(notBefore, id, idx),

    /** The resume rule (at most once): lines a stopped process had dispatched are failed, never re-run. */
    /** Fails lines left running by gateway instances that are gone (never a live instance's). */
    interruptRunning: (message: string): number => interrupt.run(message).changes,

    /** Moves a batch on; the files and the event are written in the same transaction. False: the batch was not in `from`. */
    move: writeTransaction(db, (id: string, from: readonly BatchStatus[], to: BatchStatus, now: number, extras: MoveExtras = {}): boolean => {
      const row = byId.get(id);
      if (!row || !from.includes(row.status) || !canMove(row.status, to)) return false;
      moveTo(id, to, now);
      if (extras.files) setFiles.run(extras.files.output, extras.files.error, id);
      const after = byId.get(id);
      const e = after && extras.event ? extras.event(after, counts.get(id) ?? { total: 0, completed: 0, failed: 0 }) : null;
      if (e) outbox.emit(row.project_id, e.type, e.data);
      return true;
    }),

    setErrors: (id: string, errors: unknown): void => void setErrors.run(JSON.stringify(errors), id),
    expirePending: (id: string, message: string): number => expirePending.run(message, id).changes,
  };
}

export type BatchesRepo = ReturnType<typeof createBatchesRepo>;
