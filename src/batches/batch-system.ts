/**
 * Batches in the background (issue 14, docs/decisions.md "Batches"): validation of the input file, the
 * scheduler that runs lines at bounded concurrency through the live dispatch path, finalization into an
 * output and an error file, cancellation, expiry, and the resume rule at start.
 *
 * Every line's outcome is committed before the scheduler moves on; the claim (state `running`) is
 * committed before the line is dispatched. So after a crash a line was either never sent (pending: it
 * runs now) or sent at most once (running: it is failed "interrupted", never sent again).
 */
import { parseBatchLine, splitJsonl, type BatchEndpoint } from '../core/batches/batch-lines.js';
import { eventOf, type BatchStatus, type RequestCounts } from '../core/batches/batch-machine.js';
import { createBatchScheduler, type BatchScheduler, type ClaimedLine, type LineRun } from '../core/batches/batch-scheduler.js';
import type { RecoveryCue } from '../core/coordination/recovery-cue.js';
import type { Logger } from '../log.js';
import type { BatchLineRunner } from '../app/batches/batch-line-runner.js';
import type { BatchesStore, BatchEvent, BatchRow, LineOutcome } from '../core/store/batches-store.js';
import { batchObject, isSuccess, resultLine } from './batch-object.js';

/** What batches need of the files API: read a `batch` file, write the output and error files. */
export interface BatchFiles {
  /** The file's purpose; null: no such file in the project. */
  purposeOf(projectId: string, fileId: string): Promise<string | null>;
  /** null: no such file in the project. */
  read(projectId: string, fileId: string): Promise<{ purpose: string; content: string } | null>;
  /** Returns the new file's id. */
  create(projectId: string, filename: string, purpose: string, content: Buffer): Promise<string>;
  /** Deletes a file this system wrote and then did not attach (another replica finalized first). */
  delete(projectId: string, fileId: string): Promise<void>;
}

/** Tells the other replicas that lines are ready, and hears them say so (PostgreSQL change notices). */
export interface LinesReadyChannel {
  announce(): void;
  listen(fn: () => void): () => void;
}

export interface BatchSystemOptions {
  readonly repo: BatchesStore;
  readonly files: BatchFiles;
  readonly runner: BatchLineRunner;
  readonly concurrency: number;
  /** Lines a batch may hold (OpenAI: 50,000). */
  readonly maxLines: number;
  readonly now: () => number;
  readonly logger: Logger;
  /** The cue that a sibling instance died, whose running lines then fail; absent: one instance, start only. */
  readonly instances?: RecoveryCue;
  /** Absent: one store per instance, nobody else runs its lines. */
  readonly linesReady?: LinesReadyChannel;
}

const EXPIRED_CODE = 'batch_expired';
/** Waits between attempts at a claimed line's reads and outcome while the store does not answer (about a minute in all). */
const SETTLE_RETRY_MS = [250, 500, 1000, 2000, 4000, 8000, 15_000, 30_000];

export const INTERRUPTED = 'The gateway stopped while this line was in flight; it was not run again (each line is run at most once).';

/** Lines a stopped gateway instance had in flight; a live sibling's are its own (issue 12). */
async function interruptAbandoned(repo: BatchesStore, logger: Logger): Promise<void> {
  try {
    const interrupted = await repo.interruptRunning(INTERRUPTED);
    if (interrupted > 0) logger.warn({ lines: interrupted }, 'batch lines in flight in a stopped gateway instance were failed "interrupted" (run at most once)');
  } catch (err) {
    logger.error({ err }, 'batches: failing the lines of stopped instances failed; the next sweep tries again');
  }
}

function eventFor(row: BatchRow, counts: RequestCounts): BatchEvent | null {
  const type = eventOf(row.status);
  return type ? { type, data: batchObject(row, counts) } : null;
}
const withEvent = { event: eventFor };

/**
 * A claimed line is running under this live instance: unless it is read and its outcome recorded, it
 * stays so and its batch never ends. A store that does not answer (PostgreSQL down) is asked again for
 * a while; both calls are idempotent.
 */
async function persistently<T>(logger: Logger, claimed: ClaimedLine, what: string, fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const wait = SETTLE_RETRY_MS[attempt];
      if (wait === undefined) throw err;
      logger.warn({ err, batch: claimed.batchId, line: claimed.index }, `batches: ${what} failed; retrying`);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/** Runs one claimed line through the line runner and records its outcome (or hands it back to wait). */
async function runLine(o: BatchSystemOptions, claimed: ClaimedLine): Promise<LineRun> {
  const { repo } = o;
  const [batch, line] = await persistently(o.logger, claimed, 'reading a claimed line', () => Promise.all([repo.get(claimed.batchId), repo.line(claimed.batchId, claimed.index)]));
  if (!batch || !line || line.body === null) return { kind: 'settled' };
  let outcome: LineOutcome;
  try {
    const result = await o.runner.run({
      projectId: batch.project_id,
      keyId: batch.key_id,
      workspaceNamed: batch.workspace_named,
      workspaceNamedBy: batch.workspace_named_by,
      url: batch.endpoint as BatchEndpoint,
      body: Buffer.from(line.body),
    });
    if (result.kind === 'deferred') {
      await repo.defer(claimed.batchId, claimed.index, o.now() + result.retryAfterMs);
      return { kind: 'deferred', retryAfterMs: result.retryAfterMs };
    }
    outcome = { kind: 'answered', statusCode: result.statusCode, requestId: result.requestId, body: result.body };
  } catch (err) {
    o.logger.error({ err, batch: claimed.batchId, line: claimed.index }, 'batch line failed');
    outcome = { kind: 'error', code: 'internal_error', message: 'The gateway failed to run this line.' };
  }
  await persistently(o.logger, claimed, 'recording a line', () => repo.settle(claimed.batchId, claimed.index, outcome));
  return { kind: 'settled' };
}

/** Validates a batch: its lines stored (invalid ones already answered), or the batch failed. */
async function validate(o: BatchSystemOptions, row: BatchRow): Promise<void> {
  const { repo } = o;
  const file = await o.files.read(row.project_id, row.input_file_id).catch(() => null);
  const fail = async (code: string, message: string): Promise<void> => {
    await repo.setErrors(row.id, { object: 'list', data: [{ code, message, param: 'input_file_id', line: null }] });
    await repo.move(row.id, ['validating'], 'failed', o.now(), withEvent);
  };
  if (!file) return fail('invalid_file', `The input file ${row.input_file_id} could not be read.`);
  if (file.purpose !== 'batch') return fail('invalid_file', `The input file ${row.input_file_id} has purpose ${file.purpose}, not batch.`);
  const texts = splitJsonl(file.content);
  if (texts.length === 0) return fail('empty_file', 'The input file has no lines.');
  if (texts.length > o.maxLines) return fail('too_many_requests', `The input file has ${texts.length} lines; a batch may hold ${o.maxLines}.`);
  const seen = new Set<string>();
  const lines = texts.map((t) => parseBatchLine(t, row.endpoint as BatchEndpoint, seen));
  // Cancelled while the file was read (or validated by another replica): nothing stored here.
  if (await repo.validated(row.id, lines, o.now())) o.linesReady?.announce();
}

/**
 * Writes the output and error files (only those with lines), then attaches them with the terminal state
 * and its event in one transaction. Replicas may finalize one batch at once (each one's sweep resumes a
 * batch left finalizing): the first move wins, and a loser deletes the files it wrote.
 */
async function finalize(o: BatchSystemOptions, id: string, to: 'completed' | 'expired' | 'cancelled'): Promise<void> {
  const { repo } = o;
  const row = await repo.get(id);
  if (!row) return;
  const done = await repo.doneLines(id);
  const ok = done.filter(isSuccess).map((l) => resultLine(id, l));
  const bad = done.filter((l) => !isSuccess(l)).map((l) => resultLine(id, l));
  const write = (lines: string[], name: string): Promise<string | null> =>
    lines.length === 0 ? Promise.resolve(null) : o.files.create(row.project_id, `${id}_${name}.jsonl`, 'batch_output', Buffer.from(`${lines.join('\n')}\n`));
  const outputId = await write(ok, 'output');
  const errorId = await write(bad, 'error');
  const from: BatchStatus[] = to === 'cancelled' ? ['cancelling'] : ['finalizing'];
  if (await repo.move(id, from, to, o.now(), { ...withEvent, files: { output: outputId, error: errorId } })) return;
  for (const fileId of [outputId, errorId]) if (fileId !== null) await o.files.delete(row.project_id, fileId);
}

/** Moves a batch on from its lines' state, once the validation (if any) is done: expiry, finalization, a cancel's end. */
async function settleBatch(o: BatchSystemOptions, row: BatchRow): Promise<void> {
  const { repo } = o;
  const id = row.id;
  const lines = await repo.activity(id);
  if (row.status === 'in_progress') {
    const expired = row.expires_at <= o.now();
    if (!expired && lines.pending) return;
    if (lines.running) return;
    if (expired) await repo.expirePending(id, 'The batch expired before this line was run.');
    // Another replica that ran one of the last lines may move it first: it then finalizes.
    if (await repo.move(id, ['in_progress'], 'finalizing', o.now())) await finalize(o, id, expired ? 'expired' : 'completed');
  } else if (row.status === 'finalizing') {
    // Stopped while finalizing: expiry left its mark on the lines it failed.
    await finalize(o, id, (await repo.doneLines(id)).some((l) => l.error_code === EXPIRED_CODE) ? 'expired' : 'completed');
  } else if (row.status === 'cancelling' && !lines.running) {
    await finalize(o, id, 'cancelled');
  }
}

/** Moves a batch on when its lines allow (one move per batch at a time): validation, then settleBatch. */
function createAdvance(o: BatchSystemOptions, wake: () => void): (id: string) => Promise<void> {
  const busy = new Set<string>();
  return async (id) => {
    if (busy.has(id)) return;
    busy.add(id);
    try {
      let row = await o.repo.get(id);
      if (!row) return;
      if (row.status === 'validating') {
        await validate(o, row);
        wake();
        // On at once from what validation left: a batch whose every line was invalid has nothing to run
        // and completes now (not at the next minute's sweep); one cancelled while the file was read ends.
        row = await o.repo.get(id);
        if (!row) return;
      }
      await settleBatch(o, row);
    } catch (err) {
      o.logger.error({ err, batch: id }, 'batch could not move on; retried at the next sweep');
    } finally {
      busy.delete(id);
    }
  };
}

export function createBatchSystem(o: BatchSystemOptions) {
  const { repo } = o;
  let sweepTimer: NodeJS.Timeout | null = null;
  let stopRecovering: (() => void) | null = null;
  let stopListening: (() => void) | null = null;
  const advance = createAdvance(o, () => scheduler.wake());

  const scheduler: BatchScheduler = createBatchScheduler({
    concurrency: o.concurrency,
    claim: () => repo.claim(o.now()),
    run: (claimed) => runLine(o, claimed),
    afterLine: (line) => void advance(line.batchId),
    onError: (err) => o.logger.error({ err }, 'batch scheduler error'),
    setTimer: (fn, ms) => setTimeout(fn, ms).unref(),
    clearTimer: (h) => clearTimeout(h as NodeJS.Timeout),
  });

  /** Every live batch, once: what start resumes and what the minute sweep catches (expiry). */
  async function sweep(): Promise<void> {
    try {
      for (const row of await repo.live()) void advance(row.id);
    } catch (err) {
      o.logger.error({ err }, 'batches: listing live batches failed; the next sweep tries again');
    }
    scheduler.wake();
  }

  return {
    scheduler,
    objectOf: async (row: BatchRow) => batchObject(row, await repo.counts(row.id)),
    /** A new batch: validated in the background. */
    created(id: string): void {
      setImmediate(() => void advance(id));
    },
    /** validating | in_progress -> cancelling; lines in flight finish (each answered once), the rest never run. */
    async cancel(id: string): Promise<boolean> {
      const moved = await repo.move(id, ['validating', 'in_progress'], 'cancelling', o.now());
      if (moved) setImmediate(() => void advance(id));
      return moved;
    },
    /** The resume rule, then every live batch moves on. */
    async start(): Promise<void> {
      await interruptAbandoned(repo, o.logger);
      stopRecovering = o.instances?.onSweep(() => void interruptAbandoned(repo, o.logger)) ?? null;
      stopListening = o.linesReady?.listen(() => scheduler.wake()) ?? null;
      await sweep();
      sweepTimer = setInterval(() => void sweep(), 60_000).unref();
    },
    async close(): Promise<void> {
      if (sweepTimer) clearInterval(sweepTimer);
      stopRecovering?.();
      stopListening?.();
      await scheduler.close();
    },
  };
}

export type BatchSystem = ReturnType<typeof createBatchSystem>;
