/**
 * The usage journal: what makes "every answered turn is billed" survive a SIGKILL. The ledger batches rows
 * for 50 ms before its writer thread inserts them (usage-ledger.ts), so a killed process used to lose the
 * turns of its last 50 ms. Now each row is first appended to a segment file before the turn's answer
 * leaves: the kernel holds the bytes once write(2) returns, so a killed process loses nothing (a power loss
 * can, as with synchronous=NORMAL). No fsync, no lock, no SQL on the event loop.
 *
 * Under load the rows of one event-loop turn share one write(2) (issue 35: a write per row was ~10% of a
 * non-streamed request's CPU). Once rows come less than 0.1 ms apart (journal-turn-group.ts), a recorded
 * row is held until `setImmediate`, and the journal is the HTTP answers' barrier (http/reply.ts
 * AnswerBarrier): an answer that would end while rows are held waits for that write. A row that comes
 * alone is written at once. Paths whose result leaves some other way call `settle()` (a realtime event:
 * writes what is held now) or wait for `after` (a batch line's stored answer, a stored Response: the
 * ledger's `journaled()`).
 *
 * Each batch handed to the writer is exactly one segment: the segment is rotated when the batch is cut.
 * The writer inserts the rows with the segment's marker in one transaction, then unlinks the file.
 *
 * Segments left by dead instances are replayed the same way: at start, before the budgets are rebuilt, and
 * whenever a heartbeat finds an instance dead (issue 12). A segment's file name carries the id of the
 * gateway instance that wrote it (store/instances-registry.ts), and only segments whose instance is no
 * longer registered are touched, so a starting instance never replays the open segment of a live sibling.
 * Two instances may find one dead segment at the same moment: each first claims it by renaming the file to
 * `<segment>.replay-<its id>` (rename is atomic: one wins, the other gets ENOENT and moves on), and only
 * the winner reads it. A claim left by an instance that died while replaying is taken over the same way;
 * the marker, inserted with the rows, makes a segment apply once even if the writer (or a dead replayer)
 * had committed it just before the kill. Names from builds before instance ids (`seg-<pid>-...`) are
 * judged by their process id, as those builds did.
 */
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Db } from './db.js';
import { processAlive } from './instances-liveness.js';
import { TurnGroup } from './journal-turn-group.js';
import { createSqliteRunner } from './sql/sqlite-runner.js';
import { forgetSegments, storeSegment } from './usage/usage-ledger-writes.js';
import { USAGE_COLUMNS } from './usage/usage-tables.js';
import type { LedgerRow, UsageStore } from '../core/store/usage-store.js';

export const journalDirOf = (dbPath: string): string => `${dbPath}.usage-journal`;

/** `seg-<instance id>-<ms>-<n>.jsonl`; before instance ids, `seg-<pid>-<ms>-<n>.jsonl`. */
const SEGMENT = /^seg-(inst_[0-9a-f]+)-\d+-\d+\.jsonl$/;
const LEGACY_SEGMENT = /^seg-(\d+)-\d+-\d+\.jsonl$/;
/** A segment being replayed by the named instance. */
const CLAIMED = /^(seg-.+\.jsonl)\.replay-(inst_[0-9a-f]+)$/;

/**
 * One line a row: the column values in USAGE_COLUMNS order (half the bytes of an object, no key parsing).
 * One JSON.stringify of a literal array: 1.1 us, against 2.7 us for a loop over the columns (measured).
 */
function lineOf(r: LedgerRow): string {
  return `${JSON.stringify([
    r.requestId, r.projectId, r.workspaceId, r.endpointId, r.keyId, r.route, r.promptTokens, r.completionTokens,
    r.cachedTokens, r.reasoningTokens, r.serviceTier, r.tierMultiplier, r.status, r.usageSource, r.latencyMs, r.createdAt,
    r.model, r.costNanos, r.ttftMs, r.errorCode, r.upstreamServer, r.retries,
  ])}\n`;
}

/**
 * One literal, one hidden class: adding the 18 columns one by one to `{}` turned every row into a
 * dictionary-mode object (V8's TooManyFastProperties), once per row on the writer thread.
 */
function rowOf(v: unknown[]): LedgerRow {
  return {
    requestId: v[0], projectId: v[1], workspaceId: v[2] ?? null, endpointId: v[3], keyId: v[4], route: v[5], promptTokens: v[6],
    completionTokens: v[7], cachedTokens: v[8], reasoningTokens: v[9] ?? null, serviceTier: v[10], tierMultiplier: v[11], status: v[12],
    usageSource: v[13], latencyMs: v[14], createdAt: v[15], model: v[16] ?? null, costNanos: v[17] ?? null,
    ttftMs: v[18] ?? null, errorCode: v[19] ?? null, upstreamServer: v[20] ?? null, retries: v[21] ?? null,
  } as LedgerRow;
}

/** Columns of a line written before the Requests page's four (ttft, error code, server, retries). */
const LEGACY_COLUMNS = 18;

/** A torn last line (killed inside write(2)) belonged to a turn whose answer had not gone out. */
export function parseSegment(text: string): LedgerRow[] {
  const rows: LedgerRow[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    try {
      const values = JSON.parse(line) as unknown;
      // Segments written before migration 018 have the first 18 columns only (the rest read as null).
      if (Array.isArray(values) && (values.length === USAGE_COLUMNS.length || values.length === LEGACY_COLUMNS)) rows.push(rowOf(values));
    } catch {
      // torn tail: skipped
    }
  }
  return rows;
}

export interface UsageJournal {
  /**
   * Writes the row to the open segment (opened on first use): at once, or under load held for the event-loop
   * turn's one write at setImmediate.
   */
  append(row: LedgerRow): void;
  /** Rows are held: an answer must wait (`after`) or write them first (`settle`). */
  readonly holding: boolean;
  /** Runs `send` once the held rows are written (at once when none are held). */
  after(send: () => void): void;
  /** Writes the held rows now, then lets the answers waiting on them go. */
  settle(): void;
  /** Writes the held rows, closes the open segment and returns its name (null when no row came since the last cut). */
  cut(): string | null;
  /**
   * No append has failed: every segment cut holds every row recorded into it, so the writer may read a
   * batch's rows from its segment instead of being handed them (usage-ledger.ts).
   */
  readonly intact: boolean;
  readonly dir: string;
}

/** `now`: a monotonic clock in milliseconds (tests hand in their own), read to tell load from one row at a time. */
export function createUsageJournal(dbPath: string, instanceId: string, onError: (message: string) => void, now: () => number = () => performance.now()): UsageJournal {
  const dir = journalDirOf(dbPath);
  mkdirSync(dir, { recursive: true });
  const prefix = `seg-${instanceId}-${Date.now()}-`;
  let next = 0;
  let fd: number | null = null;
  let name: string | null = null;
  let broken = false;
  const fail = (err: unknown): void => {
    // A full or read-only disk must not fail the turn: the row still goes to the batched insert, only
    // without its crash protection. Said once, loudly.
    broken = true;
    group.drop();
    onError(`usage journal disabled: ${(err as Error).message}`);
  };
  const write = (text: string): void => {
    if (fd === null) return;
    const bytes = Buffer.from(text, 'utf8');
    try {
      // A regular file takes the whole buffer unless the disk is full; the loop is for that short write.
      for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
    } catch (err) {
      fail(err);
    }
  };
  const group = new TurnGroup(write, now, onError);

  return {
    dir,
    get intact() {
      return !broken;
    },
    get holding() {
      return group.holding;
    },
    append(row) {
      if (broken) return;
      try {
        if (fd === null) {
          name = `${prefix}${next++}.jsonl`;
          fd = openSync(join(dir, name), 'a');
        }
      } catch (err) {
        fail(err);
        return;
      }
      group.add(lineOf(row));
    },
    after: (send) => group.after(send),
    settle: () => group.settle(),
    cut() {
      if (fd === null) return null;
      group.writeHeld();
      closeSync(fd);
      fd = null;
      const done = name;
      name = null;
      return done;
    },
  };
}

/** What replay needs of the instance registry. */
export interface JournalOwners {
  /** The replaying instance. */
  readonly id: string;
  isRegistered(instanceId: string): boolean;
}

/** The segment a journal file holds (its marker's name): a segment's own name, or a claim's; null for anything else. */
export function segmentOfFile(file: string): string | null {
  if (SEGMENT.test(file) || LEGACY_SEGMENT.test(file)) return file;
  return CLAIMED.exec(file)?.[1] ?? null;
}

/** The file's segment name (its marker) if it is a dead instance's segment, or a dead replayer's claim. */
function abandonedSegment(file: string, owners: JournalOwners, alive: (pid: number) => boolean): string | null {
  const claimed = CLAIMED.exec(file);
  if (claimed) return claimed[2] !== owners.id && !owners.isRegistered(claimed[2] ?? '') ? (claimed[1] ?? null) : null;
  const current = SEGMENT.exec(file);
  if (current) return current[1] !== owners.id && !owners.isRegistered(current[1] ?? '') ? file : null;
  const legacy = LEGACY_SEGMENT.exec(file);
  // A previous process with our pid is certainly gone.
  if (legacy) return Number(legacy[1]) === process.pid || !alive(Number(legacy[1])) ? file : null;
  return null;
}

/** Renames the file to this instance's claim; false when another instance renamed (or replayed) it first. */
function claim(dir: string, file: string, claimedPath: string): boolean {
  try {
    renameSync(join(dir, file), claimedPath);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** The abandoned segments of the journal folder, each claimed by this instance (renamed), in name order. */
function* claimAbandoned(dir: string, owners: JournalOwners, alive: (pid: number) => boolean): Generator<{ segment: string; claimedPath: string }> {
  let files: string[];
  try {
    files = readdirSync(dir);
  } catch {
    return;
  }
  for (const file of files.sort()) {
    const segment = abandonedSegment(file, owners, alive);
    if (segment === null) continue;
    const claimedPath = join(dir, `${segment}.replay-${owners.id}`);
    if (claim(dir, file, claimedPath)) yield { segment, claimedPath };
  }
}

/**
 * Applies the segments that dead instances left (at start before the budgets are rebuilt, and after a
 * heartbeat found an instance dead). Returns how many segments this instance replayed and how many rows
 * went in (rows of segments a writer had already committed are not counted again).
 */
export function replayUsageJournal(db: Db, dbPath: string, owners: JournalOwners, alive: (pid: number) => boolean = processAlive): { segments: number; rows: number } {
  const runner = createSqliteRunner(db);
  let inserted = 0;
  const gone: string[] = [];
  for (const { segment, claimedPath } of claimAbandoned(journalDirOf(dbPath), owners, alive)) {
    inserted += runner.writeSync(storeSegment(segment, parseSegment(readFileSync(claimedPath, 'utf8'))));
    unlinkSync(claimedPath);
    gone.push(segment);
  }
  if (gone.length > 0) runner.writeSync(forgetSegments(gone));
  return { segments: gone.length, rows: inserted };
}

/**
 * The same into a usage store of any kind (PostgreSQL, issue 12). A segment the store refused (PostgreSQL
 * down) is given its name back, so that the next sweep, or another instance once this one is gone, takes
 * it again; the error is then thrown.
 */
export async function replayUsageJournalInto(store: Pick<UsageStore, 'storeSegment' | 'forgetSegments'>, dbPath: string, owners: JournalOwners, alive: (pid: number) => boolean = processAlive): Promise<{ segments: number; rows: number }> {
  const dir = journalDirOf(dbPath);
  let inserted = 0;
  const gone: string[] = [];
  try {
    for (const { segment, claimedPath } of claimAbandoned(dir, owners, alive)) {
      try {
        inserted += await store.storeSegment(segment, parseSegment(readFileSync(claimedPath, 'utf8')));
      } catch (err) {
        renameSync(claimedPath, join(dir, segment));
        throw err;
      }
      unlinkSync(claimedPath);
      gone.push(segment);
    }
  } finally {
    if (gone.length > 0) await store.forgetSegments(gone);
  }
  return { segments: gone.length, rows: inserted };
}
