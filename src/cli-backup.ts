/**
 * `switchboard backup`: a consistent copy of a store while a gateway serves and writes to it, through
 * SQLite's online backup API (better-sqlite3 `db.backup`), plus the `<db>.key` file its sealed values
 * (webhook secrets, routing decision excerpts) open with. Never a copy of the raw file: in WAL mode the
 * latest commits live in `<db>-wal` until a checkpoint, and a file copied mid-write can be torn.
 *
 * The uploaded files' bytes, which live beside the database in its `files/` folder, are copied into the
 * backup's `files/` (store/files-backup.ts): exactly those its database copy refers to. So are the usage
 * journal's segments whose rows the copy lacks (store/usage-journal-backup.ts): after a crash, the last
 * answered turns are only there until a gateway starts again.
 *
 * The copy is checked before the command says it is done: SQLite's quick_check, and when the store holds
 * sealed values, that the key kept with it opens them (what a gateway started on the copy checks first,
 * store/secret-box.ts). The source is opened without migrating it: a newer CLI must not upgrade the
 * schema under a running older gateway. A backup that fails after it began writing removes what it wrote,
 * so `DIR` never holds half a backup and the same command can simply be run again.
 */
import { chmodSync, constants, copyFileSync, existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { z } from 'zod';
import { ConfigError, loadConfigFile } from './config.js';
import { parseFlags, UsageError } from './cli-flags.js';
import { BUSY_TIMEOUT_MS } from './store/db.js';
import { copyStoreFiles, sourceRowsOf, type FilesCopy } from './store/files-backup.js';
import { removeMadeFolders } from './store/made-folders.js';
import { journalDirOf } from './store/usage-journal.js';
import { copyUnappliedSegments, type JournalCopy } from './store/usage-journal-backup.js';
import { resolveStorePath } from './store/store-path.js';
import { loadSecretBox, storedSealedValues, type SealedValue } from './store/secret-box.js';

export const BACKUP_USAGE = '  switchboard backup (--config FILE | --db PATH) --to DIR';

/**
 * Pages per backup step after the first: all of them. The backup API restarts from the first page when
 * another connection writes between two steps, so a busy gateway could keep a step-by-step copy
 * restarting; one step copies a single read snapshot, and in WAL mode a reader never blocks the writers.
 */
const ALL_PAGES = 0x7fffffff;

export interface BackupResult {
  readonly source: string;
  readonly database: string;
  readonly keyFile: string | null;
  readonly schemaVersion: number;
  readonly bytes: number;
  /** Sealed values found in the copy and opened with the key kept with it. */
  readonly sealedChecked: number;
  readonly filesDir: string;
  readonly files: FilesCopy;
  /** `<copy>.usage-journal`: written only when `journal.segments` > 0. */
  readonly journalDir: string;
  readonly journal: JournalCopy;
}

export async function backupCommand(argv: string[]): Promise<void> {
  const flags = parseFlags(
    argv,
    { config: { type: 'string' }, db: { type: 'string' }, to: { type: 'string' } },
    z.object({
      config: z.string().optional(),
      db: z.string().min(1).optional(),
      to: z.string({ error: 'is required: the folder to write the copy into' }).min(1),
    }),
  );
  if (!flags.config && !flags.db) throw new UsageError('--config or --db is required: the store to back up');
  // --db is from the working directory; storage.path is already from the config file's folder (config/load-config.ts).
  const source = flags.db !== undefined ? { path: flags.db, from: '--db' } : { path: loadConfigFile(flags.config ?? '').storage.path, from: `storage.path in ${flags.config ?? ''}` };
  const result = await backupStore(source, flags.to);
  const mib = (result.bytes / (1024 * 1024)).toFixed(1);
  process.stdout.write(`wrote ${result.database} (a consistent copy of ${result.source}: schema version ${result.schemaVersion}, ${mib} MiB, quick_check ok)\n`);
  if (result.keyFile) {
    process.stdout.write(`wrote ${result.keyFile} (its key file${result.sealedChecked > 0 ? '; checked: it opens the sealed values in the copy' : ''})\n`);
  } else if (process.env.SWITCHBOARD_SECRET_KEY) {
    process.stdout.write('no key file: the key is SWITCHBOARD_SECRET_KEY; keep its value with this backup\n');
  } else {
    process.stdout.write('no key file: the store holds no sealed values yet; a gateway started on the copy makes a new key\n');
  }
  const f = result.files;
  const left = f.deletedMeanwhile > 0 ? `; ${f.deletedMeanwhile} deleted while the backup ran, left out with their rows` : '';
  process.stdout.write(`wrote ${result.filesDir}/ (${f.files} uploaded files and ${f.parts} upload parts, ${(f.bytes / (1024 * 1024)).toFixed(1)} MiB, sizes checked against the copy${left})\n`);
  const j = result.journal;
  if (j.segments > 0) {
    process.stdout.write(`wrote ${result.journalDir}/ (${j.rows} usage rows of answered turns not yet in the database, in ${j.segments} journal segments: the gateway started on the restored store replays them)\n`);
  }
}

export async function backupStore(source: { path: string; from: string }, toDir: string, env: NodeJS.ProcessEnv = process.env): Promise<BackupResult> {
  if (source.path === ':memory:') throw new ConfigError(`${source.from} is ":memory:", a store private to the gateway's process: there is nothing to back up`);
  const sourcePath = resolve(source.path);
  if (!existsSync(sourcePath)) throw new ConfigError(`${source.from}: no database at ${sourcePath}; nothing to back up`);
  const dir = resolve(toDir);
  const database = join(dir, basename(sourcePath));
  const keySource = `${sourcePath}.key`;
  const keyTarget = `${database}.key`;
  const filesDir = join(dir, 'files');
  const journalDir = journalDirOf(database);
  for (const file of [database, `${database}-wal`, keyTarget, filesDir, journalDir]) {
    // Never over an earlier backup (or the store itself, when --to is its own folder).
    if (existsSync(file)) throw new ConfigError(`--to: ${file} already exists; back up into a new or empty folder`);
  }
  const hasKeyFile = existsSync(keySource);

  const db = new Database(sourcePath, { fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
  try {
    const schemaVersion = db.pragma('user_version', { simple: true }) as number;
    // A copy no gateway could open is refused before anything is written.
    if (!hasKeyFile && !env.SWITCHBOARD_SECRET_KEY && sealedValuesOf(db).length > 0) {
      throw new ConfigError(
        `the key file ${keySource} is missing and SWITCHBOARD_SECRET_KEY is not set, while ${sourcePath} holds values sealed with that key ` +
          '(webhook secrets, routing decision excerpts): a copy could not be restored. Restore the key file first.',
      );
    }
    const made = mkdirSync(dir, { recursive: true });
    try {
      await db.backup(database, { progress: () => ALL_PAGES });
      if (hasKeyFile) {
        // The key never changes once made (secret-box.ts writes it once), so copying it after the pages is safe.
        copyFileSync(keySource, keyTarget, constants.COPYFILE_EXCL);
        chmodSync(keyTarget, 0o600);
      }
      // The source stays open for the files copy: bytes it cannot find are told apart by its rows (files-backup.ts).
      const rows = sourceRowsOf(db);
      const { sealedChecked, copied } = verifyCopy(database, hasKeyFile, env, (copy) => ({
        // The journal first: the sooner after the snapshot, the fewer segments a running writer commits meanwhile.
        journal: copyUnappliedSegments(copy, journalDirOf(sourcePath), journalDir),
        files: copyStoreFiles(copy, resolveStorePath(sourcePath).filesDir, filesDir, rows),
      }));
      return { source: sourcePath, database, keyFile: hasKeyFile ? keyTarget : null, schemaVersion, bytes: statSync(database).size, sealedChecked, filesDir, journalDir, ...copied };
    } catch (err) {
      // Half a backup must not look like one, nor make the retry fail with "already exists".
      discardPartialBackup([database, `${database}-wal`, `${database}-shm`, keyTarget, filesDir, journalDir], dir, made);
      throw err;
    }
  } finally {
    db.close();
  }
}

/**
 * Removes what a failed backup wrote: its own targets (it refused to start over any of them), and the
 * folders mkdir made for it (`firstMade` and those below it, down to `dir`) while they are empty.
 */
function discardPartialBackup(targets: readonly string[], dir: string, firstMade: string | undefined): void {
  for (const target of targets) rmSync(target, { recursive: true, force: true });
  removeMadeFolders(dir, firstMade);
}

function sealedValuesOf(db: Database.Database): SealedValue[] {
  // A store from before the webhook or router migrations has no such tables: nothing sealed.
  const tables = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('webhook_endpoints', 'routing_decisions')").all();
  return tables.length === 2 ? storedSealedValues(db) : [];
}

/**
 * Opens the copy (read-write: a read-only connection would leave `-wal` and `-shm` files behind in the
 * backup folder, and the files copy may drop rows of files deleted meanwhile), copies what lives beside it
 * (`beside`: the usage journal's segments, the uploaded files), and checks it. Returns how many sealed
 * values the kept key opened, with what `beside` returned.
 */
function verifyCopy<T>(database: string, hasKeyFile: boolean, env: NodeJS.ProcessEnv, beside: (copy: Database.Database) => T): { sealedChecked: number; copied: T } {
  const copy = new Database(database, { fileMustExist: true });
  try {
    const copied = beside(copy);
    const check = copy.pragma('quick_check', { simple: true });
    if (check !== 'ok') throw new Error(`the copy ${database} fails SQLite's quick_check: ${String(check)}`);
    const sealed = sealedValuesOf(copy);
    // Nothing sealed: nothing to open, and loadSecretBox would make a key file in the backup folder.
    if (sealed.length === 0 || (!hasKeyFile && !env.SWITCHBOARD_SECRET_KEY)) return { sealedChecked: 0, copied };
    // As a gateway started on the copy would load its key; throws SecretKeyError (exit 2) when it does not open them.
    loadSecretBox(database, sealed, env);
    return { sealedChecked: sealed.length, copied };
  } finally {
    copy.close();
  }
}
