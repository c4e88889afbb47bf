/**
 * The usage journal in a backup and a restore. After a crash, before a gateway has started again on the
 * store, the rows of the last answered turns are only in `<db>.usage-journal/` (usage-journal.ts): a copy
 * of the database alone lacks them, though every answered turn's row is promised to survive a SIGKILL.
 *
 * The backup carries the segments whose rows its database copy does not hold, as files, into
 * `DIR/<db>.usage-journal/`; restore puts them beside the restored database, and the gateway that starts
 * on it replays them as it replays any dead instance's segments, before the budgets are rebuilt. Why
 * files and not rows inserted into the copy: the replay is then the one already proven against SIGKILL
 * (its marker rows make a segment apply once), run by the build that migrated the restored store first.
 * A newer CLI backing up an older gateway's store would otherwise write rows shaped for its own schema
 * (columns, and the spend rollup kept by a trigger before schema 19 and by the writer since) into the
 * older schema.
 *
 * Which segments: the directory is read after the database snapshot. The writer commits a segment's rows
 * with its marker, unlinks the file, and deletes the marker only in a later transaction; so a segment file
 * still there after the snapshot was either committed in it, marker included (left out here: its rows are
 * in the copy), or not (carried, rows and all). A claim (`<segment>.replay-<instance>`) is carried under
 * its segment's name. The markers left in the copy are then deleted: none has a file beside the copy.
 *
 * A backup of a serving gateway also carries its open segment, rows answered after the snapshot included:
 * each still goes in once. A segment the writer commits between the snapshot and the read of the folder
 * is neither in the copy nor carried: the turns of the batch in flight when the backup began (the writer
 * commits every 50 ms) may be missing from a backup of a serving gateway, as they always were.
 */
import { constants, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { newInstanceId } from './instances-registry.js';
import { parseSegment, segmentOfFile } from './usage-journal.js';

export interface JournalCopy {
  readonly segments: number;
  /** Usage rows in the carried segments: answered turns the database copy does not hold yet. */
  readonly rows: number;
}

/** The journal files in `dir` (none when it does not exist), in name order. */
export function journalSegmentFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((file) => segmentOfFile(file) !== null).sort();
}

/** Copies the segments of `fromDir` whose marker `copy` (the backed-up database) lacks into `toDir`. */
export function copyUnappliedSegments(copy: Database.Database, fromDir: string, toDir: string): JournalCopy {
  // A store from before the journal has no markers table: then no segment was ever committed with one.
  const hasMarkers = copy.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'usage_journal_segments'").get() !== undefined;
  const applied = hasMarkers ? copy.prepare<[string], { one: number }>('SELECT 1 AS one FROM usage_journal_segments WHERE segment = ?') : null;
  let segments = 0;
  let rows = 0;
  for (const file of journalSegmentFiles(fromDir)) {
    const segment = segmentOfFile(file) ?? file;
    if (applied?.get(segment) !== undefined) continue;
    let bytes: Buffer;
    try {
      bytes = readFileSync(join(fromDir, file));
    } catch (err) {
      // Committed and unlinked by a running gateway's writer since the directory was read.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    if (segments === 0) mkdirSync(toDir, { recursive: true });
    // The bytes read, not the file again: a live instance's open segment may grow meanwhile. A torn last
    // line is skipped on replay, as after a kill. 'wx': never over a file.
    writeFileSync(join(toDir, segment), bytes, { flag: 'wx' });
    segments += 1;
    rows += parseSegment(bytes.toString('utf8')).length;
  }
  // The markers left are of segments whose rows the copy holds and whose files stay behind: a marker is
  // needed only while its file exists (the writer deletes it later), and in the restored store none will.
  if (hasMarkers) copy.prepare('DELETE FROM usage_journal_segments').run();
  return { segments, rows };
}

/**
 * Restore: the backup's segments into the restored store's journal, where its gateway replays them at
 * start. Each goes in claimed by an instance id of the restore's own, which no store registers: a gateway
 * replays a segment only once its writer's instance is not registered, and the restored database still
 * lists the instances that served the source (one of them may have beaten a second before the backup);
 * a claim by an unregistered instance is taken over at once, as a replayer's that died.
 */
export function restoreSegments(fromDir: string, toDir: string): number {
  const files = journalSegmentFiles(fromDir);
  if (files.length === 0) return 0;
  mkdirSync(toDir, { recursive: true });
  const claimant = newInstanceId();
  for (const file of files) {
    copyFileSync(join(fromDir, file), join(toDir, `${segmentOfFile(file) ?? file}.replay-${claimant}`), constants.COPYFILE_EXCL);
  }
  return files.length;
}
