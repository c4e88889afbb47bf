/**
 * The usage ledger: one row per turn. Rows are queued and handed in batches (every FLUSH_MS or BATCH_MAX
 * rows) to a writer thread that inserts them in one transaction, so the hot path does no SQL. Each row is
 * also appended to the usage journal before the turn's answer leaves (under load one write(2) for the
 * rows of an event-loop turn, usage-journal.ts), so a killed process loses no answered turn: its segments
 * are replayed at the next start. While every append has succeeded, a batch is handed over as its
 * segment's name alone and the writer reads the rows from the file. A batch the writer could not store
 * comes back and is sent again, whole, with its segment.
 */
import { Packr } from 'msgpackr';
import type { BilledRow, LedgerRow } from '../core/store/usage-store.js';
import type { StoreWriter } from './store-writer.js';
import type { UsageJournal } from './usage-journal.js';

export type { BilledRow, LedgerRow, UsageRow } from '../core/store/usage-store.js';

/** What routes record through: one row per turn, made by app/usage-row.ts (the only maker of a BilledRow). */
export interface UsageLedger {
  /**
   * Journals the row before any HTTP answer leaves (under load the journal holds the HTTP answers back for
   * its shared write: usage-journal.ts) and queues it for the batched insert.
   */
  record(row: BilledRow): void;
  /** Writes the rows recorded so far to the journal now: before a result leaves other than as an HTTP answer. */
  settle(): void;
  /** Resolves once the rows recorded so far are in the journal (with the next shared write, not one of its own). */
  journaled(): Promise<void>;
  /** Hands every queued row to the writer and resolves once they are stored; then stops the writer. */
  close(): Promise<void>;
}

/** The writer under the charging layer: rows as stored. */
export interface LedgerWriter {
  record(row: LedgerRow): void;
  settle(): void;
  journaled(): Promise<void>;
  /** Hands every queued row to the writer and resolves once they are stored; then stops the writer. */
  close(): Promise<void>;
}

const FLUSH_MS = 50;
const BATCH_MAX = 512;

/**
 * `journal` null: no crash protection (the in-memory store, whose file dies with the process anyway). The
 * writer must have been made with the same journal's folder, since it unlinks the segments it stores.
 */
export function createUsageLedger(writer: StoreWriter, journal: UsageJournal | null, onError: (message: string) => void): LedgerWriter {
  const packr = new Packr({ useRecords: true });
  let queue: LedgerRow[] = [];
  let timer: NodeJS.Timeout | null = null;
  let inFlight = 0;
  let idle: (() => void) | null = null;
  // Batches the writer refused, sent again as they were: a batch is exactly its segment's rows.
  let refused: { packed: Uint8Array<ArrayBuffer> | null; segment: string | null }[] = [];
  let retryTimer: NodeJS.Timeout | null = null;
  let closing = false;

  const post = (packed: Uint8Array<ArrayBuffer> | null, segment: string | null): void => {
    inFlight += 1;
    writer.post({ kind: 'usage', packed, segment }, packed === null ? [] : [packed.buffer]);
  };
  const retry = (): void => {
    retryTimer = null;
    const again = refused;
    refused = [];
    for (const b of again) post(b.packed, b.segment);
  };

  writer.onReply((reply) => {
    if (reply.kind === 'usage-failed') {
      onError(reply.message);
      refused.push({ packed: reply.packed === null ? null : new Uint8Array(reply.packed), segment: reply.segment });
      retryTimer ??= setTimeout(retry, FLUSH_MS * 20);
    }
    if (reply.kind === 'usage-written' || reply.kind === 'usage-failed') {
      inFlight -= 1;
      // Closing, a refused batch is not waited for: its rows stay in the journal for the next start.
      if (inFlight === 0 && (refused.length === 0 || closing)) idle?.();
    }
  });
  writer.onError((err) => onError(err.message));

  function flush(): void {
    if (timer) clearTimeout(timer);
    timer = null;
    if (queue.length === 0) return;
    const segment = journal?.cut() ?? null;
    // The segment already holds the batch, one line a row: the writer reads it there, and the rows are not
    // serialized a second time on the event loop (msgpack cost ~2.6 us a row, the largest part of a flush).
    // A copy of msgpackr's output otherwise: it reuses its buffer, which must not be detached by the transfer.
    post(segment !== null && journal?.intact === true ? null : new Uint8Array(packr.pack(queue)), segment);
    queue = [];
  }

  return {
    record(row) {
      journal?.append(row);
      queue.push(row);
      if (queue.length >= BATCH_MAX) flush();
      else timer ??= setTimeout(flush, FLUSH_MS);
    },
    settle() {
      journal?.settle();
    },
    journaled() {
      return journal === null ? Promise.resolve() : new Promise<void>((resolve) => journal.after(resolve));
    },
    async close() {
      closing = true;
      flush();
      if (retryTimer) {
        clearTimeout(retryTimer);
        retry();
      }
      if (inFlight > 0) await new Promise<void>((resolve) => (idle = resolve));
      await writer.release();
    },
  };
}
