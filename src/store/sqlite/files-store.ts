/**
 * The files port on this instance's SQLite file and disk: store/files-store.ts unchanged underneath
 * (bytes under the store's `files/` folder, rows and `file.*` events in SQLite), behind promises. A staged
 * blob's `ref` is its temp file's path.
 */
import { createReadStream } from 'node:fs';
import type { FilesStore, StagedBytes } from '../../core/store/files-store.js';
import type { EventOutbox } from '../../core/webhooks/outbox.js';
import type { Db } from '../db.js';
import { createFilesStore, type TempFile } from '../files-store.js';
import { StagingsInFlight } from '../stagings-in-flight.js';

const READ_HIGH_WATER_MARK = 256 * 1024;
/** How long a graceful stop waits for cut-off writes to remove their temp files. */
const CLOSE_WAIT_MS = 5_000;

const tempOf = (staged: StagedBytes): TempFile => ({ path: staged.ref, bytes: staged.bytes, md5: staged.md5 });

export function createSqliteFilesStore(db: Db, dir: string, outbox: EventOutbox, now: () => number): FilesStore {
  const disk = createFilesStore(db, dir, outbox, now);
  const inFlight = new StagingsInFlight();
  return {
    async stage(source, maxBytes) {
      const temp = await inFlight.track(disk.writeTemp(source, maxBytes));
      return { ref: temp.path, bytes: temp.bytes, md5: temp.md5 };
    },
    discard: async (staged) => disk.discardTemp(tempOf(staged)),
    commit: (projectId, staged, filename, purpose) => disk.commit(projectId, tempOf(staged), filename, purpose),
    get: async (projectId, fileId) => disk.get(projectId, fileId),
    async open(projectId, fileId) {
      const opened = disk.open(projectId, fileId);
      return opened ? { meta: opened.meta, content: createReadStream(opened.path, { highWaterMark: READ_HIGH_WATER_MARK }) } : null;
    },
    list: async (projectId, query) => disk.list(projectId, query),
    delete: (projectId, fileId) => disk.delete(projectId, fileId),
    createUpload: async (projectId, input) => disk.createUpload(projectId, input),
    getUpload: async (projectId, uploadId) => disk.getUpload(projectId, uploadId),
    addPart: (projectId, upload, staged) => disk.addPart(projectId, upload, tempOf(staged)),
    complete: (projectId, upload, partIds, md5) => disk.complete(projectId, upload, partIds, md5),
    cancel: (projectId, upload) => disk.cancel(projectId, upload),
    sweepExpired: () => disk.sweepExpired(),
    close: () => inFlight.settled(CLOSE_WAIT_MS),
  };
}
