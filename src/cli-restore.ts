/**
 * `switchboard restore --from DIR`: puts a `switchboard backup` folder (database, key file, `files/`, the
 * usage journal's segments) where a gateway's store lives, on this host or a new one. The gateway must be
 * stopped; the command never writes over a store: an existing database, WAL, key, uploaded files or usage
 * journal segments at the target are refused (move them aside first), so a mistyped path cannot destroy
 * the live data, and no segment of another store is replayed into the restored one when it starts.
 *
 * The backup is checked before anything is written: SQLite's quick_check, and every file its database
 * lists present in its `files/` with the recorded size (store/files-backup.ts). The key's check against
 * the sealed values happens where it always does, when a gateway opens the restored store.
 */
import { chmodSync, constants, copyFileSync, cpSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { z } from 'zod';
import { ConfigError, loadConfigFile } from './config.js';
import { parseFlags, UsageError } from './cli-flags.js';
import { verifyStoreFiles } from './store/files-backup.js';
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
  mkdirSync(dirname(database), { recursive: true });
  copyFileSync(source, database, constants.COPYFILE_EXCL);
  const keySource = `${source}.key`;
  const keyFile = existsSync(keySource) ? `${database}.key` : null;
  if (keyFile) {
    copyFileSync(keySource, keyFile, constants.COPYFILE_EXCL);
    chmodSync(keyFile, 0o600);
  }
  if (existsSync(join(from, 'files'))) cpSync(join(from, 'files'), filesDir, { recursive: true, force: false, errorOnExist: true });
  const journal = restoreSegments(journalDirOf(source), journalDir);
  return { from, database, keyFile, filesDir, files, journalDir, journal };
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
