/**
 * Files and uploads (issue 14): the rows, written once (store/files/), on the main connection with their
 * file.* events; the bytes under the store's files/ folder with SQLite, in PostgreSQL with it (shared by
 * every replica).
 */
import type { Services } from '../app/services.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { FilesServices } from '../routes/files.js';
import { createFilesStore } from '../store/files/files-store.js';
import { createPgFileBytes } from '../store/postgres/pg-file-bytes.js';
import { createDiskFileBytes } from '../store/sqlite/disk-file-bytes.js';
import type { StoreOutbox } from '../store/webhooks/webhook-outbox.js';
import { mainTransactionEvents, type StoreParts } from './store.js';

export function wireFiles(services: Services, config: Config, parts: StoreParts, outbox: StoreOutbox, logger: Logger): FilesServices {
  const { backend, db, store, mainSql } = parts;
  const bytes = backend.pg ? createPgFileBytes(backend.pg.pool) : createDiskFileBytes(db, store.filesDir);
  const files = createFilesStore({ runner: mainSql.runner, events: mainTransactionEvents(parts, outbox), bytes, now: services.now });
  // What a crash left in PostgreSQL (staged bytes never committed) goes at start, as the disk store's leftovers do.
  if (backend.pg) files.sweepExpired().catch((err: unknown) => logger.error({ err }, 'files: sweeping leftovers failed; the next upload sweeps again'));
  return { ...services, files, filesConfig: config.files };
}
