/**
 * `switchboard restore --from DIR`: puts a `switchboard backup` folder (database, key file, `files/`, the
 * usage journal's segments) where a gateway's store lives, on this host or a new one. The gateway must be
 * stopped; the command never writes over a store: an existing database, WAL, key, uploaded files or usage
 * journal segments at the target are refused (move them aside first), so a mistyped path cannot destroy
 * the live data, and no segment of another store is replayed into the restored one when it starts.
 *
 * The backup is checked before anything is written: SQLite's quick_check, and every file its database
 * lists present in its `files/` with the recorded size (store/files-backup.ts). The key's check against
 * the sealed values happens where it always does, when a gateway opens the restored store. The copies go
 * into a staging folder beside the target and are moved into place only when all succeeded: a restore
 * failing partway leaves the target as it was, never half a store a later start would run on.
 */
import { chmodSync, constants, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { z } from 'zod';
import { ConfigError, loadConfigFile } from './config.js';
import { parseFlags, UsageError } from './cli-flags.js';
import { verifyStoreFiles } from './store/files-backup.js';
import { removeMadeFolders } from './store/made-folders.js';
import { placeStaged } from './store/place-staged.js';
import { journalDirOf } from './store/usage-journal.js';
import { journalSegmentFiles, restoreSegments } from './store/usage-journal-backup.js';
import { resolveStorePath } from './store/store-path.js';

export const RESTORE_USAGE = '  switchboard restore --from DIR (--config FILE | --db PATH)     # the gateway stopped; never over a store';

export async function restoreCommand(argv: string[]): Promise<void> {
  const flags = parseFlags(
    argv,
    { config: { type: 'string' }, db: { type: 'string' }, from: { type: 'string' } },
    z.object({
      config: z.string().optional(),
      db: z.string().min(1).optional(),
      from: z.string({ error: 'is required: the folder `switchboard backup --to` wrote' }).min(1),
    }),
  );
  if (!flags.config && !flags.db) throw new UsageError('--config or --db is required: where the restored store goes');
  const target = flags.db !== undefined ? flags.db : loadConfigFile(flags.config ?? '').storage.path;
  const done = restoreStore(flags.from, target);
  process.stdout.write(`restored ${done.database}${done.keyFile ? ` and ${done.keyFile}` : ''} and ${done.files} uploaded files into ${done.filesDir}/ from ${done.from}\n`);
  if (done.journal > 0) {
    process.stdout.write(`restored ${done.journal} usage journal segments into ${done.journalDir}/: the gateway replays their answered turns into the ledger when it starts\n`);
  }
}

export interface RestoreResult {
  readonly from: string;
  readonly database: string;
  readonly keyFile: string | null;
  readonly filesDir: string;
  readonly files: number;
  readonly journalDir: string;
  /** Usage journal segments put into `journalDir`, for the gateway to replay at start. */
  readonly journal: number;
}

/** The one `.db` file a backup folder holds. */
function backedUpDatabase(from: string): string {
  if (!existsSync(from)) throw new ConfigError(`--from: ${from} does not exist`);
  const dbs = readdirSync(from).filter((n) => n.endsWith('.db'));
  if (dbs.length !== 1) throw new ConfigError(`--from: ${from} must hold exactly one .db file, as \`switchboard backup --to\` writes it (found ${dbs.length})`);
  return join(from, dbs[0] ?? '');
}

export function restoreStore(fromDir: string, targetPath: string): RestoreResult {
  if (targetPath === ':memory:') throw new ConfigError('the target store is ":memory:", private to a gateway process: restore into a storage.path on disk');
  const from = resolve(fromDir);
  const source = backedUpDatabase(from);
  const database = resolve(targetPath);
  const filesDir = resolveStorePath(database).filesDir;
  for (const path of [database, `${database}-wal`, `${database}.key`]) {
    if (existsSync(path)) throw new ConfigError(`${path} already exists: stop the gateway and move the current store aside (database, -wal, -shm, .key and files/) before restoring`);
  }
  if (existsSync(filesDir) && readdirSync(filesDir).some((n) => n.startsWith('file-'))) {
    throw new ConfigError(`${filesDir} already holds uploaded files: move it aside before restoring`);
  }
  const journalDir = journalDirOf(database);
  const left = journalSegmentFiles(journalDir).length;
  if (left > 0) {
    throw new ConfigError(
      `${journalDir} holds ${left} usage journal segments of the store that was there: the gateway would replay them into the restored store at start. ` +
        'Move the folder aside with the rest of that store before restoring',
    );
  }
  const files = checkBackup(source, join(from, 'files'));
  const journal = stageAndPlace(from, source, database);
  return { from, database, keyFile: existsSync(`${source}.key`) ? `${database}.key` : null, filesDir, files, journalDir, journal };
}

/**
 * Copies the backup into a staging folder beside the target, then moves it into place (store/place-staged.ts):
 * a copy failing partway (an unreadable backup file, a full disk) leaves the target as it was, with no
 * half store a later start would run on. Returns the usage journal segments restored.
 */
function stageAndPlace(from: string, source: string, database: string): number {
  const parent = dirname(database);
  const name = basename(database);
  const made = mkdirSync(parent, { recursive: true });
  try {
    const staging = mkdtempSync(join(parent, `.${name}.restore-`));
    try {
      const staged = join(staging, name);
      copying(source, () => copyFileSync(source, staged, constants.COPYFILE_EXCL));
      if (existsSync(`${source}.key`)) {
        copying(`${source}.key`, () => copyFileSync(`${source}.key`, `${staged}.key`, constants.COPYFILE_EXCL));
        chmodSync(`${staged}.key`, 0o600);
      }
      const filesFrom = join(from, 'files');
      if (existsSync(filesFrom)) copying(`${filesFrom}/`, () => cpSync(filesFrom, join(staging, 'files'), { recursive: true, force: false, errorOnExist: true }));
      const journal = copying(`${journalDirOf(source)}/`, () => restoreSegments(journalDirOf(source), journalDirOf(staged)));
      // The database last: until it is in place, there is no store at the path for a gateway to start on.
      placeStaged(staging, parent, ['files', basename(journalDirOf(name)), `${name}.key`, name]);
      return journal;
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
  } catch (err) {
    removeMadeFolders(parent, made);
    throw new Error(`restore failed and left nothing at ${database}: ${(err as Error).message}`);
  }
}

/** Runs one copy step; its failure names the backup file (an I/O error's `path`, else `source`) and the cause. */
function copying<T>(source: string, step: () => T): T {
  try {
    return step();
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    // Node's message ends with the syscall and both paths, the second of them in the staging folder, gone by now.
    const cause = e.code !== undefined && e.syscall !== undefined ? (e.message.split(`, ${e.syscall} `)[0] ?? e.message) : e.message;
    throw new Error(`could not copy ${e.path ?? source} (${cause})`);
  }
}

/** quick_check and the files against the backup's rows; read-only, so the backup folder gains nothing. */
function checkBackup(source: string, filesDir: string): number {
  const db = new Database(source, { fileMustExist: true, readonly: true });
  try {
    const check = db.pragma('quick_check', { simple: true });
    if (check !== 'ok') throw new ConfigError(`${source} fails SQLite's quick_check (${String(check)}): this backup is damaged`);
    try {
      return verifyStoreFiles(db, filesDir);
    } catch (err) {
      throw new ConfigError(`${(err as Error).message}: this backup is incomplete`);
    }
  } finally {
    db.close();
  }
}
