/**
 * Batches' view of the files API (store/files-store.ts): the input file read whole (lines are stored in
 * SQLite at validation), the output and error files written through the same commit as an upload, so
 * they are listed, downloaded (`GET /v1/files/{id}/content`) and deleted like any other file.
 */
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { FilesStore } from '../store/files-store.js';
import type { BatchFiles } from './batch-system.js';

export function batchFilesOf(files: FilesStore): BatchFiles {
  return {
    purposeOf: (projectId, fileId) => Promise.resolve(files.get(projectId, fileId)?.purpose ?? null),
    async read(projectId, fileId) {
      const opened = files.open(projectId, fileId);
      if (!opened) return null;
      return { purpose: opened.meta.purpose, content: await readFile(opened.path, 'utf8') };
    },
    async create(projectId, filename, purpose, content) {
      const temp = await files.writeTemp(Readable.from([content]), content.length + 1);
      const meta = await files.commit(projectId, temp, filename, purpose);
      return meta.id;
    },
  };
}
