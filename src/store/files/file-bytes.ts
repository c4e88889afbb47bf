/**
 * The files aggregate's bytes: the one part of it each backend keeps its own way (issue 33). SQLite keeps
 * them on this instance's disk (sqlite/disk-file-bytes.ts), PostgreSQL in chunk rows every replica reads
 * (postgres/pg-file-bytes.ts). The metadata, written once (files-store.ts), calls these at fixed points
 * of its programs so that a file or part row never exists without all its bytes: bytes are staged
 * completely, placed before the row's transaction, claimed inside it, released when the row was not
 * inserted, and dropped with the row.
 */
import type { Readable } from 'node:stream';
import type { StagedBytes } from '../../core/store/files-store.js';
import type { SqlProgram } from '../sql/sql-program.js';

/** Whose bytes: a file's, or an upload part's. */
export type BytesOwner = 'file' | 'part';

/** A file's or a part's row, as far as its bytes are concerned (`blob_id`: PostgreSQL's column only). */
export interface BytesRow {
  readonly id: string;
  readonly blob_id?: string;
}

/** Bytes ready to become a row's: complete and durable, not yet the row's. */
export interface PlacedBytes {
  /** What the row's `blob_id` holds (PostgreSQL); undefined on SQLite, whose rows have no such column. */
  readonly blobId: string | undefined;
  /** Inside the row's transaction: makes the bytes the row's (throws when they are gone). */
  claim(): SqlProgram<void>;
  /** The row was refused or its transaction failed: its bytes go. */
  release(): Promise<void>;
}

/** An upload's parts, in order, about to be one file's bytes. */
export interface JoinedBytes {
  readonly bytes: number;
  /** Lowercase hex MD5 of the joined bytes. */
  md5(): Promise<string>;
  /** The join will not become a file (its MD5 was refused). */
  discard(): Promise<void>;
  place(fileId: string): Promise<PlacedBytes>;
}

export interface FileBytes {
  /** Streams `source` into staged bytes. Rejects with FilesRefusal('too_large') past `maxBytes`, keeping nothing. */
  stage(source: Readable, maxBytes: number): Promise<StagedBytes>;
  discard(staged: StagedBytes): Promise<void>;
  /** Before the row's transaction (SQLite: renamed into place and fsynced). */
  place(staged: StagedBytes, owner: BytesOwner, id: string): Promise<PlacedBytes>;
  join(parts: readonly BytesRow[], bytes: number): Promise<JoinedBytes>;
  /** A file's bytes, read on demand. */
  read(file: BytesRow): Readable;
  /** Inside the transaction that deleted the rows (PostgreSQL: their blobs). */
  dropWith(rows: readonly BytesRow[]): SqlProgram<void>;
  /** Once that transaction committed (SQLite: their files on disk). */
  dropAfter(owner: BytesOwner, rows: readonly BytesRow[]): Promise<void>;
  /** Staged bytes a crash or a lost client left behind (PostgreSQL; SQLite sweeps its folder when it opens). */
  sweep(): Promise<void>;
}
