/**
 * The usage ledger: one row per turn. Rows are queued and handed in batches (every FLUSH_MS or BATCH_MAX
 * rows) to a writer thread that inserts them in one transaction, so the hot path does no disk write and
 * no SQL. A crash loses at most the rows of the last FLUSH_MS; a batch the writer could not store comes
 * back and is retried with the next one.
 */
import { Worker } from 'node:worker_threads';
import { Packr } from 'msgpackr';
import type { WriterMessage, WriterReply } from './usage-writer-thread.js';

export interface UsageRow {
  readonly requestId: string;
  readonly projectId: string;
  readonly workspaceId: string | null;
  readonly endpointId: string;
  readonly keyId: string;
  readonly route: string;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly cachedTokens: number;
  readonly reasoningTokens: number | null;
  readonly serviceTier: string;
  readonly tierMultiplier: number;
  /** completed | aborted | error | timeout */
  readonly status: string;
  readonly usageSource: 'upstream' | 'estimated';
  readonly latencyMs: number;
  readonly createdAt: number;
}

/**
 * A row as stored: what the charging layer (charging-ledger.ts) adds to the route's row from the config at
 * the moment of the turn.
 */
export interface LedgerRow extends UsageRow {
  /** The endpoint's public model id; null when the endpoint is not in the config (it always is today). */
  readonly model: string | null;
  /** Nano-dollars (core/usage/cost.ts); null when the endpoint has no price. */
  readonly costNanos: number | null;
}

/** What routes record through: one row per turn. */
export interface UsageLedger {
  record(row: UsageRow): void;
  /** Hands every queued row to the writer and resolves once they are stored; then stops the writer. */
  close(): Promise<void>;
}

/** The writer under the charging layer: rows as stored. */
export interface LedgerWriter {
  record(row: LedgerRow): void;
  /** Hands every queued row to the writer and resolves once they are stored; then stops the writer. */
  close(): Promise<void>;
}

const FLUSH_MS = 50;
const BATCH_MAX = 512;

export function createUsageLedger(dbPath: string, onError: (message: string) => void): LedgerWriter {
  const writer = new Worker(new URL('./usage-writer-thread.js', import.meta.url), { workerData: { path: dbPath } });
  writer.unref();
  const packr = new Packr({ useRecords: true });
  let queue: LedgerRow[] = [];
  let timer: NodeJS.Timeout | null = null;
  let inFlight = 0;
  let idle: (() => void) | null = null;

  writer.on('message', (reply: WriterReply) => {
    if (reply.kind === 'failed') {
      onError(reply.message);
      queue = [...(packr.unpack(reply.packed) as LedgerRow[]), ...queue];
      timer ??= setTimeout(flush, FLUSH_MS * 20);
    }
    if (reply.kind !== 'closed') {
      inFlight -= 1;
      if (inFlight === 0) idle?.();
    }
  });
  writer.on('error', (err) => onError(err.message));

  function flush(): void {
    if (timer) clearTimeout(timer);
    timer = null;
    if (queue.length === 0) return;
    inFlight += 1;
    // A copy: msgpackr reuses its output buffer, which must not be detached by the transfer.
    const packed = new Uint8Array(packr.pack(queue));
    writer.postMessage({ kind: 'rows', packed } satisfies WriterMessage, [packed.buffer]);
    queue = [];
  }

  return {
    record(row) {
      queue.push(row);
      if (queue.length >= BATCH_MAX) flush();
      else timer ??= setTimeout(flush, FLUSH_MS);
    },
    async close() {
      flush();
      if (inFlight > 0) await new Promise<void>((resolve) => (idle = resolve));
      const closed = new Promise<void>((resolve) => writer.once('message', (r: WriterReply) => r.kind === 'closed' && resolve()));
      writer.postMessage({ kind: 'close' } satisfies WriterMessage);
      await closed;
      await writer.terminate();
    },
  };
}
