/**
 * The usage journal (store/usage-journal.ts): every recorded row is on disk before the batched insert,
 * each segment is applied exactly once (by the writer or by a replay at start, whichever comes first), a
 * torn last line is skipped, and a live process's open segment is never replayed by another. The writer
 * is a worker thread, so the ledger is imported compiled from dist/ (built by the global setup).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/store/db.js';
import { createSqliteRunner } from '../../../src/store/sql/sqlite-runner.js';
import { storeSegment } from '../../../src/store/usage/usage-ledger-writes.js';
import { createUsageJournal, journalDirOf, parseSegment, replayUsageJournal } from '../../../src/store/usage-journal.js';
import type { LedgerRow } from '../../../src/store/usage-ledger.js';
import { createUsageLedger } from '../../../dist/src/store/usage-ledger.js';
import { createUsageJournal as createCompiledJournal } from '../../../dist/src/store/usage-journal.js';
import { createStoreWriter } from '../../../dist/src/store/store-writer.js';

const dir = mkdtempSync(join(tmpdir(), 'usage-journal-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function row(i: number): LedgerRow {
  return {
    requestId: `chatcmpl-${i}`, projectId: 'proj_1', workspaceId: i % 2 ? null : 'ws_1', endpointId: 'ep-1', keyId: 'key_1',
    route: 'chat', promptTokens: i, completionTokens: i + 1, cachedTokens: 0, reasoningTokens: i % 3 ? null : 2,
    serviceTier: 'default', tierMultiplier: 1, status: 'completed', usageSource: 'upstream', latencyMs: i + 0.5,
    createdAt: 1_700_000_000_000 + i, model: 'm', costNanos: i % 4 ? i * 10 : null,
    ttftMs: i % 2 ? 12.5 : null, errorCode: i % 2 ? null : 'timeout', upstreamServer: 'http://127.0.0.1:9/v1', retries: i % 2,
  };
}

function freshStore(name: string): string {
  const path = join(dir, name);
  openDatabase(path).close();
  return path;
}

function storedIds(path: string): string[] {
  const db = new Database(path, { readonly: true });
  const ids = (db.prepare('SELECT request_id FROM usage_events ORDER BY id').all() as { request_id: string }[]).map((r) => r.request_id);
  db.close();
  return ids;
}

function markers(path: string): string[] {
  const db = new Database(path, { readonly: true });
  const names = (db.prepare('SELECT segment FROM usage_journal_segments').all() as { segment: string }[]).map((r) => r.segment);
  db.close();
  return names;
}

/** The replaying instance, alone on the store: every other instance id is a dead one's. */
const NOBODY_LIVE = { id: 'inst_5e1f', isRegistered: () => false };

describe('the usage journal', () => {
  it('writes a lone row at once, and under load the rows of one event-loop turn together, before the answers waiting on them', async () => {
    const path = freshStore('append.db');
    let clock = 0;
    const journal = createUsageJournal(path, 'inst_0dead', () => undefined, () => clock);
    const segmentRows = (): LedgerRow[] => {
      const files = readdirSync(journal.dir);
      expect(files).toHaveLength(1);
      return parseSegment(readFileSync(join(journal.dir, files[0] as string), 'utf8'));
    };
    const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
    journal.append(row(1));
    // One row at a time: on disk the moment it is recorded, nothing held.
    expect(segmentRows()).toEqual([row(1)]);
    expect(journal.holding).toBe(false);
    journal.append(row(2));
    // A second row in the same turn is held for the turn's one write, and an answer waits for it.
    expect(journal.holding).toBe(true);
    expect(segmentRows()).toEqual([row(1)]);
    const seenByAnswer: LedgerRow[][] = [];
    journal.after(() => seenByAnswer.push(segmentRows()));
    expect(seenByAnswer).toEqual([]);
    await nextTurn();
    expect(seenByAnswer).toEqual([[row(1), row(2)]]);
    expect(journal.holding).toBe(false);
    // After a busy turn the next one groups from its first row, however late it comes...
    clock = 1000;
    journal.append(row(3));
    expect(journal.holding).toBe(true);
    await nextTurn();
    expect(segmentRows()).toEqual([row(1), row(2), row(3)]);
    // ...and after a turn with one row, a row that comes alone is written at once again.
    clock = 2000;
    journal.append(row(4));
    expect(journal.holding).toBe(false);
    expect(segmentRows()).toEqual([row(1), row(2), row(3), row(4)]);
    // Nothing held: an answer goes at once.
    journal.after(() => seenByAnswer.push([]));
    expect(seenByAnswer).toHaveLength(2);
    const files = readdirSync(journal.dir);
    expect(journal.cut()).toBe(files[0]);
    expect(journal.cut()).toBeNull();
  });

  it('settle() writes the held rows at once and lets the answers waiting on them go', () => {
    const path = freshStore('settle.db');
    const journal = createUsageJournal(path, 'inst_0dead', () => undefined, () => 0);
    journal.append(row(3));
    journal.append(row(4));
    const order: string[] = [];
    journal.after(() => order.push(`answer sees ${parseSegment(readFileSync(join(journal.dir, readdirSync(journal.dir)[0] as string), 'utf8')).length} rows`));
    expect(order).toEqual([]);
    journal.settle();
    expect(order).toEqual(['answer sees 2 rows']);
    expect(journal.holding).toBe(false);
  });

  it('a cut writes the held rows into the segment it closes', () => {
    const path = freshStore('cut.db');
    const journal = createUsageJournal(path, 'inst_0dead', () => undefined, () => 0);
    journal.append(row(4));
    journal.append(row(5));
    expect(journal.holding).toBe(true);
    const name = journal.cut();
    expect(name).not.toBeNull();
    expect(parseSegment(readFileSync(join(journal.dir, name as string), 'utf8'))).toEqual([row(4), row(5)]);
    expect(journal.holding).toBe(false);
  });

  it('reads a line written before the request-detail columns with those columns null', () => {
    const legacy = JSON.stringify(['chatcmpl-9', 'proj_1', null, 'ep-1', 'key_1', 'chat', 1, 2, 0, null, 'default', 1, 'completed', 'upstream', 1.5, 1_700_000_000_000, 'm', 10]);
    expect(parseSegment(`${legacy}\n`)).toEqual([expect.objectContaining({ requestId: 'chatcmpl-9', costNanos: 10, ttftMs: null, errorCode: null, upstreamServer: null, retries: null })]);
  });

  it('leaves no segment and no marker behind once the writer has stored every batch', async () => {
    const path = freshStore('writer.db');
    const errors: string[] = [];
    const journal = createCompiledJournal(path, 'inst_0dead', (m: string) => errors.push(m));
    const ledger = createUsageLedger(createStoreWriter({ path, journalDir: journal.dir }, 1), journal, (m) => errors.push(m));
    for (let i = 0; i < 600; i += 1) ledger.record(row(i)); // one full batch of 512 and a tail
    await ledger.close();
    expect(errors).toEqual([]);
    expect(storedIds(path)).toEqual(Array.from({ length: 600 }, (_, i) => `chatcmpl-${i}`));
    expect(readdirSync(journalDirOf(path))).toEqual([]);
    expect(markers(path)).toEqual([]);
  });

  it("journaled() resolves with the event-loop turn's shared write, the row then on disk", async () => {
    const path = freshStore('journaled.db');
    const journal = createCompiledJournal(path, 'inst_0dead', () => undefined, () => 0);
    const ledger = createUsageLedger(createStoreWriter({ path, journalDir: journal.dir }, 1), journal, () => undefined);
    ledger.record(row(8));
    ledger.record(row(9));
    const onDisk: LedgerRow[][] = [];
    const journaled = ledger.journaled().then(() => onDisk.push(parseSegment(readFileSync(join(journal.dir, readdirSync(journal.dir)[0] as string), 'utf8'))));
    expect(journal.holding).toBe(true);
    await journaled;
    expect(onDisk).toEqual([[row(8), row(9)]]);
    // Nothing held: at once.
    await ledger.journaled();
    await ledger.close();
  });

  it('replays the segments of a dead process once, skipping a torn last line', () => {
    const path = freshStore('replay.db');
    const jdir = journalDirOf(path);
    createUsageJournal(path, 'inst_0dead', () => undefined); // makes the folder
    const lines = [row(1), row(2)].map((r) => JSON.stringify([r.requestId, r.projectId, r.workspaceId, r.endpointId, r.keyId, r.route, r.promptTokens, r.completionTokens, r.cachedTokens, r.reasoningTokens, r.serviceTier, r.tierMultiplier, r.status, r.usageSource, r.latencyMs, r.createdAt, r.model, r.costNanos]));
    writeFileSync(join(jdir, 'seg-999999-1-0.jsonl'), `${lines.join('\n')}\n["chatcmpl-3","proj_1",nu`);
    const db = openDatabase(path);
    expect(replayUsageJournal(db, path, NOBODY_LIVE, () => false)).toEqual({ segments: 1, rows: 2 });
    expect(replayUsageJournal(db, path, NOBODY_LIVE, () => false)).toEqual({ segments: 0, rows: 0 });
    db.close();
    expect(storedIds(path)).toEqual(['chatcmpl-1', 'chatcmpl-2']);
    expect(readdirSync(jdir)).toEqual([]);
    expect(markers(path)).toEqual([]);
  });

  it('does not apply again a segment the writer committed just before the kill (marker present, file not yet unlinked)', () => {
    const path = freshStore('committed.db');
    const journal = createUsageJournal(path, 'inst_0dead', () => undefined);
    journal.append(row(7));
    const segment = journal.cut() as string;
    const db = openDatabase(path);
    createSqliteRunner(db).writeSync(storeSegment(segment, [row(7)]));
    expect(replayUsageJournal(db, path, NOBODY_LIVE, () => false)).toEqual({ segments: 1, rows: 0 });
    db.close();
    expect(storedIds(path)).toEqual(['chatcmpl-7']);
    expect(existsSync(join(journal.dir, segment))).toBe(false);
    expect(markers(path)).toEqual([]);
  });

  it('never replays a segment of another live instance sharing the store', () => {
    const path = freshStore('live.db');
    const journal = createUsageJournal(path, 'inst_a11ce', () => undefined);
    journal.append(row(1));
    const db = openDatabase(path);
    const aliceLives = { id: 'inst_5e1f', isRegistered: (id: string) => id === 'inst_a11ce' };
    expect(replayUsageJournal(db, path, aliceLives, () => false)).toEqual({ segments: 0, rows: 0 });
    db.close();
    expect(readdirSync(journal.dir)).toHaveLength(1);
  });

  it("never replays a segment named by the pid of another live process (a build before instance ids)", () => {
    const path = freshStore('live-legacy.db');
    const journal = createUsageJournal(path, 'inst_0dead', () => undefined);
    journal.append(row(1));
    const file = readdirSync(journal.dir)[0] as string;
    const renamed = file.replace(/^seg-inst_[0-9a-f]+-/, 'seg-424242-');
    writeFileSync(join(journal.dir, renamed), readFileSync(join(journal.dir, file)));
    rmSync(join(journal.dir, file));
    const db = openDatabase(path);
    expect(replayUsageJournal(db, path, NOBODY_LIVE, (pid) => pid === 424242)).toEqual({ segments: 0, rows: 0 });
    db.close();
    expect(readdirSync(journal.dir)).toEqual([renamed]);
  });

  it('leaves a segment another live instance is replaying, and takes over one whose replayer died', () => {
    const path = freshStore('claimed.db');
    const journal = createUsageJournal(path, 'inst_0dead', () => undefined);
    journal.append(row(5));
    const segment = journal.cut() as string;
    const claimed = `${segment}.replay-inst_b0b`;
    renameSync(join(journal.dir, segment), join(journal.dir, claimed));
    const db = openDatabase(path);
    const bobLives = { id: 'inst_5e1f', isRegistered: (id: string) => id === 'inst_b0b' };
    expect(replayUsageJournal(db, path, bobLives, () => false)).toEqual({ segments: 0, rows: 0 });
    expect(readdirSync(journal.dir)).toEqual([claimed]);
    expect(replayUsageJournal(db, path, NOBODY_LIVE, () => false)).toEqual({ segments: 1, rows: 1 });
    expect(replayUsageJournal(db, path, NOBODY_LIVE, () => false)).toEqual({ segments: 0, rows: 0 });
    db.close();
    expect(storedIds(path)).toEqual(['chatcmpl-5']);
    expect(readdirSync(journal.dir)).toEqual([]);
  });
});
