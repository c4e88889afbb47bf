/**
 * The files aggregate's storage port (issues 12 and 14): files' metadata AND bytes, uploads and their
 * parts, and the `file.uploaded` / `file.deleted` events in the transaction of the row they describe.
 * One implementation (store/files/files-store.ts) keeps the metadata on either backend; the bytes are the
 * backend's own: SQLite's on this instance's disk (store/sqlite/disk-file-bytes.ts), PostgreSQL's in a
 * chunk table, so replicas need no shared disk (store/postgres/pg-file-bytes.ts);
 * test/contract/files-store-contract.ts runs both.
 *
 * Bytes are staged first (`stage`, streamed as they arrive, never buffered whole) and only a completely
 * staged blob becomes a file or a part: a file row never exists without all its bytes.
 */
import type { Readable } from 'node:stream';
import type { FileMeta, PartMeta, UploadMeta } from '../files/file-objects.js';

/** Why a files operation was refused; routes map reasons to catalogue codes. */
export class FilesRefusal extends Error {
  constructor(
    readonly reason: 'too_large' | 'not_pending' | 'bad_parts' | 'byte_mismatch' | 'md5_mismatch',
    message: string,
  ) {
    super(message);
  }
}

/** Bytes fully written and durable, not yet a file or a part. `ref` means something to its store only. */
export interface StagedBytes {
  readonly ref: string;
  readonly bytes: number;
  /** Lowercase hex MD5 of the bytes. */
  readonly md5: string;
}

export interface ListQuery {
  readonly purpose?: string | undefined;
  readonly limit: number;
  readonly after?: string | undefined;
  readonly order: 'asc' | 'desc';
}

export interface OpenedFile {
  readonly meta: FileMeta;
  /**
   * The bytes, read on demand (backpressure): a file deleted while it is read may end the stream with an
   * error on PostgreSQL (on disk, an open reader keeps its bytes).
   */
  readonly content: Readable;
}

export interface FilesStore {
  /** Streams `source` into staged bytes. Rejects with FilesRefusal('too_large') past `maxBytes`, keeping nothing. */
  stage(source: Readable, maxBytes: number): Promise<StagedBytes>;
  /** Drops staged bytes that will not be committed (best effort; a crash's leftovers are swept later). */
  discard(staged: StagedBytes): Promise<void>;
  /** Makes the staged bytes a file: row and `file.uploaded` in one transaction. */
  commit(projectId: string, staged: StagedBytes, filename: string, purpose: string): Promise<FileMeta>;
  get(projectId: string, fileId: string): Promise<FileMeta | null>;
  /** null: no such file in that project. */
  open(projectId: string, fileId: string): Promise<OpenedFile | null>;
  /** null when `after` names no file of the project. */
  list(projectId: string, query: ListQuery): Promise<{ data: FileMeta[]; hasMore: boolean } | null>;
  /** Row and `file.deleted` in one transaction, then the bytes. false: no such file. */
  delete(projectId: string, fileId: string): Promise<boolean>;
  createUpload(projectId: string, input: { filename: string; purpose: string; bytes: number; mimeType: string }): Promise<UploadMeta>;
  getUpload(projectId: string, uploadId: string): Promise<UploadMeta | null>;
  /** Refused with FilesRefusal('not_pending') unless the upload is still pending (checked when the part is stored). */
  addPart(projectId: string, upload: UploadMeta, staged: StagedBytes): Promise<PartMeta>;
  /** The parts, in `partIds` order, become one file (`file.uploaded`); the upload is completed. */
  complete(projectId: string, upload: UploadMeta, partIds: readonly string[], md5: string | undefined): Promise<{ upload: UploadMeta; file: FileMeta }>;
  cancel(projectId: string, upload: UploadMeta): Promise<UploadMeta>;
  /** Marks pending uploads past their expiry `expired` and deletes their parts; returns how many. */
  sweepExpired(): Promise<number>;
  /**
   * At a graceful stop, once the server has closed its connections: waits (bounded) for the stagings they
   * cut off to fail and remove their bytes, so that none is left for the next start's sweep.
   */
  close(): Promise<void>;
}
