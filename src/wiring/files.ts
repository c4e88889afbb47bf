/**
 * Files and uploads (issue 14): bytes under the store's files/ folder, rows and file.* events in SQLite;
 * with PostgreSQL, rows, bytes and events there, shared by every replica.
 */
import type { Services } from '../app/services.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { FilesServices } from '../routes/files.js';
import { createPgFilesStore } from '../store/postgres/files-store.js';
import { createSqliteFilesStore } from '../store/sqlite/files-store.js';
import type { StoreOutbox } from '../store/webhook-outbox.js';
import type { StoreParts } from './store.js';

export function wireFiles(services: Services, config: Config, { backend, db, store }: StoreParts, outbox: StoreOutbox, logger: Logger): FilesServices {
  const files = backend.pg ? createPgFilesStore(backend.pg, services.now) : createSqliteFilesStore(db, store.filesDir, outbox, services.now);
  // What a crash left in PostgreSQL (staged bytes never committed) goes at start, as the disk store's leftovers do.
  if (backend.pg) files.sweepExpired().catch((err: unknown) => logger.error({ err }, 'files: sweeping leftovers failed; the next upload sweeps again'));
  return { ...services, files, filesConfig: config.files };
}
