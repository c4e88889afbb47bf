/**
 * The store's one writer thread (issue 17): the usage ledger's rows and the routing decision rows, each
 * batch in one transaction on this thread's own SQLite connection (synchronous=NORMAL, see db.ts), so no
 * insert, cipher or fsync runs on the event loop. One thread instead of one per log: one connection
 * contending for the write lock instead of two, and one thread's memory.
 *
 * Usage batches are exactly one journal segment each (usage-journal.ts): inserted with the segment's marker,
 * then the segment file is unlinked; a failed batch goes back whole, to be sent again. Decision rows are
 * telemetry: a failed batch is reported, not retried (a retry could duplicate them). Prompt excerpts are
 * sealed here (AES-256-GCM, secret-box.ts, the request id as associated data).
 *
 * With `storage.kind: postgres` (issue 12) the usage batches go to PostgreSQL instead, through this
 * thread's own connection (postgres/usage-writer.ts), one after the other; the decision rows stay here.
 * Either way a batch is the one program of usage/usage-ledger-writes.ts, which loads no query builder.
 */
import { readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { unpack } from 'msgpackr';
import { yieldToEventLoop } from '../thread-priority.js';
import { openDatabase, writeTransaction } from './db.js';
import type { DecisionRecord } from './decision-log.js';
import { loadSecretBox, storedSealedValues } from './secret-box.js';
import { createSqliteRunner } from './sql/sqlite-runner.js';
import { forgetSegments, storeBatch } from './usage/usage-ledger-writes.js';
import { parseSegment } from './usage-journal.js';
import type { LedgerRow } from './usage-ledger.js';

/** Rows travel msgpack-encoded in a transferred buffer: far cheaper than structured-cloning objects. */
export type StoreWriterMessage =
  /** `packed` null: the rows are the segment's lines, read from the journal file (usage-ledger.ts). */
  | { readonly kind: 'usage'; readonly packed: Uint8Array | null; readonly segment: string | null }
  | { readonly kind: 'decisions'; readonly seq: number; readonly packed: Uint8Array }
  | { readonly kind: 'prune-decisions'; readonly seq: number; readonly before: number }
  | { readonly kind: 'close' };
export type StoreWriterReply =
  | { readonly kind: 'usage-written'; readonly count: number }
  | { readonly kind: 'usage-failed'; readonly message: string; readonly packed: Uint8Array | null; readonly segment: string | null }
  | { readonly kind: 'decisions-done'; readonly seq: number; readonly error: string | null }
  | { readonly kind: 'closed' };

export interface StoreWriterData {
  readonly path: string;
  /** The usage journal's folder, or null when the journal is off. */
  readonly journalDir: string | null;
  /** PostgreSQL's URL when the usage ledger lives there (`storage.kind: postgres`). */
  readonly usagePgUrl?: string | null;
  /** How often this thread checkpoints the WAL the event loop's connections wrote (tests shorten it). */
  readonly checkpointEveryMs?: number;
}

/** The WAL checkpoint's period when no commit of this thread's ran one (db.ts ConnectionSite says why). */
const CHECKPOINT_EVERY_MS = 1000;

if (parentPort) {
  // At normal priority one flush every 50 ms put ~0.5 ms into whichever request was in flight on a shared
  // core: the whole of the 1-connection p99 (1.1 ms with it, 0.55 ms without; bench/RESULTS.md).
  yieldToEventLoop();
  const port = parentPort;
  const { path, journalDir, usagePgUrl = null, checkpointEveryMs = CHECKPOINT_EVERY_MS } = workerData as StoreWriterData;
  const db = openDatabase(path, 'NORMAL');
  // The event loop's connections never checkpoint (db.ts ConnectionSite): this thread's commits do, past
  // 1,000 pages as SQLite's default, and this timer covers the pages they wrote while this thread had
  // nothing to commit (a PostgreSQL ledger, exec traffic without turns, an idle gateway's heartbeats).
  // An in-memory store has no WAL.
  const checkpoints = path === ':memory:' ? undefined : setInterval(() => {
    try {
      db.pragma('wal_checkpoint(PASSIVE)');
    } catch {
      // another connection's checkpoint, or a disk error the next commit reports: the next tick tries again
    }
  }, checkpointEveryMs);

  // Usage rows.
  const runner = createSqliteRunner(db);
  // Segments unlinked since the last batch: their markers go in the next transaction (back to the list
  // when it fails, on both backends).
  let unlinked: string[] = [];
  const takeUnlinked = (): string[] => {
    const forget = unlinked;
    unlinked = [];
    return forget;
  };
  const rowsOf = (message: Extract<StoreWriterMessage, { kind: 'usage' }>): LedgerRow[] => {
    if (message.packed !== null) return unpack(message.packed) as LedgerRow[];
    if (message.segment === null || journalDir === null) throw new Error('a usage batch came with neither rows nor a journal segment');
    // Read as bytes, decoded apart: the encoding option made fs build an options object of a new shape per call.
    return parseSegment(readFileSync(join(journalDir, message.segment)).toString('utf8'));
  };
  const usage = (message: Extract<StoreWriterMessage, { kind: 'usage' }>): StoreWriterReply => {
    const forget = takeUnlinked();
    let rows: LedgerRow[];
    try {
      rows = rowsOf(message);
      runner.writeSync(storeBatch(rows, message.segment, forget));
    } catch (err) {
      unlinked = [...forget, ...unlinked];
      return { kind: 'usage-failed', message: (err as Error).message, packed: message.packed, segment: message.segment };
    }
    return usageStored(message.segment, rows.length);
  };
  // Loaded only with a PostgreSQL ledger: pg costs the thread of every SQLite gateway ~0.3 s of CPU to start.
  // Messages that come meanwhile wait in the port (it starts with the 'message' listener below).
  const pgUsage = usagePgUrl === null ? null : (await import('./postgres/usage-writer.js')).createPgUsageWriter(usagePgUrl);
  const usageToPg = async (message: Extract<StoreWriterMessage, { kind: 'usage' }>, writer: NonNullable<typeof pgUsage>): Promise<StoreWriterReply> => {
    const forget = takeUnlinked();
    let rows: LedgerRow[];
    try {
      rows = rowsOf(message);
      await writer.store(rows, message.segment, forget);
    } catch (err) {
      unlinked = [...forget, ...unlinked];
      return { kind: 'usage-failed', message: (err as Error).message, packed: message.packed, segment: message.segment };
    }
    return usageStored(message.segment, rows.length);
  };
  /** A stored segment's file goes; its marker goes with the next batch. */
  const usageStored = (segment: string | null, count: number): StoreWriterReply => {
    if (segment !== null && journalDir !== null) {
      try {
        unlinkSync(join(journalDir, segment));
        unlinked.push(segment);
      } catch {
        // left for the next start's replay, which finds the marker and only unlinks it
      }
    }
    return { kind: 'usage-written', count };
  };

  // Routing decision rows.
  const box = loadSecretBox(path, storedSealedValues(db));
  const insertDecision = db.prepare(`
    INSERT INTO routing_decisions (request_id, project_id, workspace_id, created_at, route_reason, query_preview, detail)
    VALUES (?, ?, ?, ?, ?, ?, ?)`);
  // Sealed before the transaction: the write lock it takes first (db.ts) is held only for the inserts,
  // since the event loop's management writes wait on it.
  const storeDecisions = writeTransaction(db, (rows: readonly DecisionRecord[], sealed: readonly string[]) => {
    rows.forEach((r, i) => {
      insertDecision.run(r.requestId, r.projectId, r.workspaceId, r.createdAt, r.routeReason, sealed[i] ?? '', JSON.stringify(r.detail));
    });
  });
  const sealAll = (rows: readonly DecisionRecord[]): string[] => rows.map((r) => (r.preview === '' ? '' : box.seal(r.preview, r.requestId)));
  const pruneDecisions = db.prepare('DELETE FROM routing_decisions WHERE created_at < ?');
  const decisions = (run: () => void, seq: number): StoreWriterReply => {
    try {
      run();
      return { kind: 'decisions-done', seq, error: null };
    } catch (err) {
      return { kind: 'decisions-done', seq, error: (err as Error).message };
    }
  };

  port.on('message', (message: StoreWriterMessage) => {
    switch (message.kind) {
      case 'usage':
        if (pgUsage) void usageToPg(message, pgUsage).then((reply) => port.postMessage(reply));
        else port.postMessage(usage(message));
        return;
      case 'decisions': {
        const { packed, seq } = message;
        port.postMessage(decisions(() => {
          const rows = unpack(packed) as DecisionRecord[];
          storeDecisions(rows, sealAll(rows));
        }, seq));
        return;
      }
      case 'prune-decisions':
        port.postMessage(decisions(() => pruneDecisions.run(message.before), message.seq));
        return;
      case 'close':
        clearInterval(checkpoints);
        if (pgUsage) {
          // After the batches still being written; the markers of their files go in a last transaction.
          void pgUsage
            .close(unlinked)
            .catch(() => undefined)
            .finally(() => {
              db.close();
              port.postMessage({ kind: 'closed' } satisfies StoreWriterReply);
            });
          return;
        }
        if (unlinked.length > 0) runner.writeSync(forgetSegments(unlinked));
        db.close();
        port.postMessage({ kind: 'closed' } satisfies StoreWriterReply);
    }
  });
}
