/**
 * The files aggregate's tables, declared once for both backends: files, uploads and their parts (the
 * metadata; the bytes are each backend's own, file-bytes.ts). Created by SQLite migration 010 and
 * PostgreSQL migration 007 (history: released migrations are never edited); test/contract/
 * store-schema.test.ts compares this declaration with both live schemas. On PostgreSQL a file's or a
 * part's row names its blob (`blob_id`, postgres/file-blobs.ts); on SQLite its bytes are named after its id.
 */
import type { UploadStatus } from '../../core/files/file-objects.js';
import { generated, integer, maybeText, onlyIn, text, type TablesOf } from '../sql/table-schema.js';

export const FILES_SCHEMA = {
  files: {
    // Orders a project's files (SQLite's rowid, PostgreSQL's sequence) and serves the list's `after` cursor.
    seq: generated(integer()),
    id: text(),
    project_id: text(),
    filename: text(),
    purpose: text(),
    bytes: integer(),
    created_at: integer(),
    blob_id: onlyIn('postgres', text()),
  },
  uploads: {
    id: text(),
    project_id: text(),
    filename: text(),
    purpose: text(),
    bytes: integer(),
    mime_type: text(),
    status: text<UploadStatus>(),
    created_at: integer(),
    expires_at: integer(),
    file_id: maybeText(),
  },
  upload_parts: {
    id: text(),
    upload_id: text(),
    bytes: integer(),
    created_at: integer(),
    blob_id: onlyIn('postgres', text()),
  },
} as const;

export type FilesTables = TablesOf<typeof FILES_SCHEMA>;
