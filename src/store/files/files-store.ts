/**
 * The files port (core/store/files-store.ts), its metadata written once for SQLite and PostgreSQL (issue
 * 33): files, uploads and parts as rows (stored-files.ts, uploads-store.ts), each change with its `file.*`
 * event in the row's transaction (TransactionEvents). The bytes are the backend's own (file-bytes.ts),
 * called at fixed points so that a row never exists without all its bytes: staged completely first,
 * placed before the row's transaction, claimed inside it, released when the row was not inserted. On
 * PostgreSQL every replica reads and writes the same rows and bytes, so a file uploaded through one is
 * listed, downloaded and deleted through any other.
 */
import type { FilesStore } from '../../core/store/files-store.js';
import { sqlFor } from '../sql/sql-builder.js';
import { StagingsInFlight } from '../stagings-in-flight.js';
import type { FilesTables } from './files-tables.js';
import { fileMethods, type FilesStoreDeps } from './stored-files.js';
import { uploadMethods } from './uploads-store.js';

export type { FilesStoreDeps };

/** How long a graceful stop waits for cut-off stagings to remove their bytes. */
const CLOSE_WAIT_MS = 5_000;

export function createFilesStore(deps: FilesStoreDeps): FilesStore {
  const { db } = sqlFor<FilesTables>(deps.runner.dialect);
  const inFlight = new StagingsInFlight();
  return {
    stage: (source, maxBytes) => inFlight.track(deps.bytes.stage(source, maxBytes)),
    discard: (staged) => deps.bytes.discard(staged),
    ...fileMethods(deps, db),
    ...uploadMethods(deps, db),
    close: () => inFlight.settled(CLOSE_WAIT_MS),
  };
}
