/**
 * The Files and Uploads API's records and their OpenAI wire shapes (openai-node resources/files.d.ts,
 * uploads/uploads.d.ts): times on the wire are Unix seconds, in the store milliseconds. Pure.
 */

export const FILE_PURPOSES = ['batch', 'assistants', 'user_data', 'fine-tune', 'vision', 'evals'] as const;
export type FilePurpose = (typeof FILE_PURPOSES)[number];

export interface FileMeta {
  readonly id: string;
  readonly projectId: string;
  readonly filename: string;
  readonly purpose: string;
  readonly bytes: number;
  /** Unix ms. */
  readonly createdAt: number;
}

export type UploadStatus = 'pending' | 'completed' | 'cancelled' | 'expired';

export interface UploadMeta {
  readonly id: string;
  readonly projectId: string;
  readonly filename: string;
  readonly purpose: string;
  readonly bytes: number;
  readonly mimeType: string;
  /** As stored; a pending upload past `expiresAt` reads as expired (uploadStatusAt). */
  readonly status: UploadStatus;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly fileId: string | null;
}

export interface PartMeta {
  readonly id: string;
  readonly uploadId: string;
  readonly bytes: number;
  readonly createdAt: number;
}

/** Uploads expire an hour after creation (OpenAI's rule), on the injected clock. */
export const UPLOAD_TTL_MS = 60 * 60 * 1000;

export function uploadStatusAt(upload: UploadMeta, now: number): UploadStatus {
  return upload.status === 'pending' && now >= upload.expiresAt ? 'expired' : upload.status;
}

const seconds = (ms: number): number => Math.floor(ms / 1000);

export function fileObject(f: FileMeta): Record<string, unknown> {
  return { id: f.id, object: 'file', bytes: f.bytes, created_at: seconds(f.createdAt), filename: f.filename, purpose: f.purpose, status: 'processed' };
}

export function uploadObject(u: UploadMeta, now: number, file: FileMeta | null): Record<string, unknown> {
  return {
    id: u.id,
    object: 'upload',
    bytes: u.bytes,
    created_at: seconds(u.createdAt),
    expires_at: seconds(u.expiresAt),
    filename: u.filename,
    purpose: u.purpose,
    status: uploadStatusAt(u, now),
    file: file ? fileObject(file) : null,
  };
}

export function partObject(p: PartMeta): Record<string, unknown> {
  return { id: p.id, object: 'upload.part', created_at: seconds(p.createdAt), upload_id: p.uploadId };
}
