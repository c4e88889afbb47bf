/**
 * Where the store lives. `storage.path: ":memory:"` cannot be a true SQLite in-memory database here: the
 * usage ledger, routing decisions and webhook outcomes are written by worker threads on their own
 * connections, and better-sqlite3 opens no shared-cache memory URIs, so each thread would get a separate
 * empty database. It becomes a private temporary file instead, removed when the gateway stops.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface StorePath {
  readonly path: string;
  /** Where uploaded files' bytes live (store/sqlite/disk-file-bytes.ts): `files/` next to the database, or a temp folder. */
  readonly filesDir: string;
  /** A real file that outlives the process (not the `:memory:` stand-in): worth a crash journal. */
  readonly durable: boolean;
  /** Deletes the temporary store; a no-op for a real path. */
  discard(): void;
}

export function resolveStorePath(configured: string): StorePath {
  if (configured !== ':memory:') return { path: configured, filesDir: join(dirname(configured), 'files'), durable: true, discard: () => undefined };
  const path = join(tmpdir(), `switchboard-memory-${process.pid}-${randomBytes(4).toString('hex')}.db`);
  const filesDir = `${path}.files`;
  return {
    path,
    filesDir,
    durable: false,
    discard() {
      for (const suffix of ['', '-wal', '-shm', '.key']) rmSync(path + suffix, { force: true });
      rmSync(filesDir, { recursive: true, force: true });
    },
  };
}
