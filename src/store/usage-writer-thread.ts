/**
 * The usage ledger's writer thread: owns its own SQLite connection (synchronous=NORMAL, see db.ts) and
 * writes each batch it receives in one transaction, so neither the insert CPU nor any fsync ever runs on
 * the event loop. A batch is one transaction: a failed batch leaves nothing behind, so its retry cannot
 * double-bill.
 */
import { unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { unpack } from 'msgpackr';
import { yieldToEventLoop } from '../thread-priority.js';
import { openDatabase, writeTransaction } from './db.js';
import { createMarkerForgetter, createSegmentApplier, createUsageInserter } from './usage-insert.js';
import type { LedgerRow } from './usage-ledger.js';

/**
 * Rows travel msgpack-encoded in a transferred buffer: far cheaper than structured-cloning objects.
 * `segment` names the journal segment holding exactly these rows (usage-journal.ts), or null when the
 * journal is off.
 */
export type WriterMessage = { readonly kind: 'rows'; readonly packed: Uint8Array; readonly segment: string | null } | { readonly kind: 'close' };
export type WriterReply =
  | { readonly kind: 'written'; readonly count: number }
  | { readonly kind: 'failed'; readonly message: string; readonly packed: Uint8Array; readonly segment: string | null }
  | { readonly kind: 'closed' };

if (parentPort) {
  // At normal priority one flush every 50 ms put ~0.5 ms into whichever request was in flight on a shared
  // core: the whole of the 1-connection p99 (1.1 ms with it, 0.55 ms without; bench/RESULTS.md).
  yieldToEventLoop();
  const port = parentPort;
  const { path, journalDir } = workerData as { path: string; journalDir: string | null };
  const db = openDatabase(path, 'NORMAL');
  const insert = createUsageInserter(db);
  const applySegment = createSegmentApplier(db);
  const forgetMarkers = createMarkerForgetter(db);
  // Segments unlinked since the last batch: their markers go in the next transaction.
  let unlinked: string[] = [];
  const store = writeTransaction(db, (rows: readonly LedgerRow[], segment: string | null) => {
    if (unlinked.length > 0) forgetMarkers(unlinked);
    unlinked = [];
    if (segment === null) insert(rows);
    else applySegment(segment, rows);
  });
  port.on('message', (message: WriterMessage) => {
    if (message.kind === 'close') {
      if (unlinked.length > 0) writeTransaction(db, forgetMarkers)(unlinked);
      db.close();
      port.postMessage({ kind: 'closed' } satisfies WriterReply);
      return;
    }
    let rows: LedgerRow[];
    try {
      rows = unpack(message.packed) as LedgerRow[];
      store(rows, message.segment);
    } catch (err) {
      port.postMessage({ kind: 'failed', message: (err as Error).message, packed: message.packed, segment: message.segment } satisfies WriterReply);
      return;
    }
    if (message.segment !== null && journalDir !== null) {
      const segment = message.segment;
      try {
        unlinkSync(join(journalDir, segment));
        unlinked.push(segment);
      } catch {
        // left for the next start's replay, which finds the marker and only unlinks it
      }
    }
    port.postMessage({ kind: 'written', count: rows.length } satisfies WriterReply);
  });
}
