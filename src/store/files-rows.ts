/**
 * Files' and uploads' rows as both stores read them (SQLite: files-store.ts, PostgreSQL:
 * postgres/files-store.ts): the same column names and types in both schemas, one mapping to the records.
 */
import type { FileMeta, UploadMeta } from '../core/files/file-objects.js';

export interface FileRow {
  seq: number;
  id: string;
  project_id: string;
  filename: string;
  purpose: string;
  bytes: number;
  created_at: number;
}

export interface UploadRow {
  id: string;
  project_id: string;
  filename: string;
  purpose: string;
  bytes: number;
  mime_type: string;
  status: UploadMeta['status'];
  created_at: number;
  expires_at: number;
  file_id: string | null;
}

export const fileOf = (r: FileRow): FileMeta => ({ id: r.id, projectId: r.project_id, filename: r.filename, purpose: r.purpose, bytes: r.bytes, createdAt: r.created_at });

export const uploadOf = (r: UploadRow): UploadMeta => ({
  id: r.id,
  projectId: r.project_id,
  filename: r.filename,
  purpose: r.purpose,
  bytes: r.bytes,
  mimeType: r.mime_type,
  status: r.status,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  fileId: r.file_id,
});
