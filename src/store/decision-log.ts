/**
 * Routing decision rows (SPEC "Routing decision row"), written off the hot path: queued, handed every
 * FLUSH_MS (or BATCH_MAX rows) msgpack-encoded to the store's writer thread (store-writer-thread.ts, shared
 * with the usage ledger), inserted there in one transaction.
 * `flush()` waits until everything recorded so far is stored: the management reads call it, so a decision
 * is visible to the next GET. Rows older than the 24-hour window are pruned hourly (and on start).
 */
import { Packr } from 'msgpackr';
import type { StoreWriter } from './store-writer.js';
import type { StoreWriterMessage } from './store-writer-thread.js';

export interface DecisionRecord {
  readonly requestId: string;
  readonly projectId: string;
  readonly workspaceId: string | null;
  /** Unix milliseconds. */
  readonly createdAt: number;
  readonly routeReason: string;
  /** Plain prompt excerpt; sealed by the writer thread before it is stored. */
  readonly preview: string;
  /** The other fields of the row, as the decisions route returns them. */
  readonly detail: Readonly<Record<string, unknown>>;
}

export interface DecisionLog {
  record(row: DecisionRecord): void;
  flush(): Promise<void>;
  /** Deletes rows older than `before` (Unix ms). */
  prune(before: number): Promise<void>;
  close(): Promise<void>;
}

const FLUSH_MS = 50;
const BATCH_MAX = 256;

export function createDecisionLog(writer: StoreWriter, onError: (message: string) => void): DecisionLog {
  const packr = new Packr({ useRecords: true });
  let queue: DecisionRecord[] = [];
  let timer: NodeJS.Timeout | null = null;
  let seq = 0;
  const pending = new Map<number, () => void>();
  let lastSent: Promise<void> = Promise.resolve();

  writer.onReply((reply) => {
    if (reply.kind !== 'decisions-done') return;
    // A failed batch is reported, not retried: decision rows are telemetry, and a retry could duplicate them.
    if (reply.error) onError(reply.error);
    pending.get(reply.seq)?.();
    pending.delete(reply.seq);
  });
  writer.onError((err) => onError(err.message));

  function send(message: (n: number) => StoreWriterMessage, transfer: ArrayBuffer[] = []): Promise<void> {
    seq += 1;
    const n = seq;
    const done = new Promise<void>((resolve) => pending.set(n, resolve));
    writer.post(message(n), transfer);
    lastSent = done;
    return done;
  }

  function flushQueue(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = null;
    if (queue.length === 0) return Promise.resolve();
    // A copy: msgpackr reuses its output buffer, which must not be detached by the transfer.
    const packed = new Uint8Array(packr.pack(queue));
    queue = [];
    return send((n) => ({ kind: 'decisions', seq: n, packed }), [packed.buffer]);
  }

  return {
    record(row) {
      queue.push(row);
      if (queue.length >= BATCH_MAX) void flushQueue();
      else timer ??= setTimeout(() => void flushQueue(), FLUSH_MS);
    },
    async flush() {
      await flushQueue();
      // The writer handles messages in order: once the last one sent is done, all earlier ones are.
      await lastSent;
    },
    prune: (before) => send((n) => ({ kind: 'prune-decisions', seq: n, before })),
    async close() {
      await flushQueue();
      await lastSent;
      await writer.release();
    },
  };
}
