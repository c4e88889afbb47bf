/**
 * Batches' view of the files port (core/store/files-store.ts): the input file read whole (lines are stored
 * in SQLite at validation), the output and error files staged and committed like an upload, so they are
 * listed, downloaded (`GET /v1/files/{id}/content`) and deleted like any other file. With PostgreSQL the
 * files are shared: a batch reads an input uploaded through another replica, and its output is readable
 * through every replica.
 */
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import type { FilesStore } from '../core/store/files-store.js';
import type { BatchFiles } from './batch-system.js';

export function batchFilesOf(files: FilesStore): BatchFiles {
  return {
    purposeOf: async (projectId, fileId) => (await files.get(projectId, fileId))?.purpose ?? null,
    async read(projectId, fileId) {
      const opened = await files.open(projectId, fileId);
      if (!opened) return null;
      return { purpose: opened.meta.purpose, content: await text(opened.content) };
    },
    async create(projectId, filename, purpose, content) {
      const staged = await files.stage(Readable.from([content]), content.length + 1);
      const meta = await files.commit(projectId, staged, filename, purpose);
      return meta.id;
    },
    async delete(projectId, fileId) {
      await files.delete(projectId, fileId);
    },
  };
}
