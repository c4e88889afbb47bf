/**
 * PostgreSQL: files and uploads, as SQLite's migration 010 (what each column holds is said there), and
 * their BYTES, so replicas need no shared disk: a blob is a row of `file_blobs` and its bytes rows of
 * `file_chunks` (1 MiB each, written while the upload streams in; the last one shorter, and a file made
 * of parts has each part's chunks in order). A blob is `committed` once a file or a part owns it; before
 * that it is staged, and a staged blob idle past a day (`touched_at`, wall clock) is a crash's leftover
 * (store/postgres/files-store.ts sweeps it). A file row is inserted only once its blob is complete.
 * Project ids are not foreign keys: projects belong to the catalog group.
 */
export const pgMigrationFiles = `
CREATE TABLE file_blobs (
  id TEXT PRIMARY KEY,
  bytes BIGINT NOT NULL,
  committed BOOLEAN NOT NULL,
  touched_at BIGINT NOT NULL
);
CREATE INDEX file_blobs_staged ON file_blobs (touched_at) WHERE NOT committed;

CREATE TABLE file_chunks (
  blob_id TEXT NOT NULL REFERENCES file_blobs(id) ON DELETE CASCADE,
  n INTEGER NOT NULL,
  data BYTEA NOT NULL,
  PRIMARY KEY (blob_id, n)
);

CREATE TABLE files (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL,
  filename TEXT NOT NULL,
  purpose TEXT NOT NULL,
  bytes BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  blob_id TEXT NOT NULL REFERENCES file_blobs(id)
);
CREATE INDEX files_by_project ON files (project_id, seq);

CREATE TABLE uploads (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  filename TEXT NOT NULL,
  purpose TEXT NOT NULL,
  bytes BIGINT NOT NULL,
  mime_type TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  file_id TEXT
);
CREATE INDEX uploads_pending_expiry ON uploads (expires_at) WHERE status = 'pending';

CREATE TABLE upload_parts (
  id TEXT PRIMARY KEY,
  upload_id TEXT NOT NULL REFERENCES uploads(id) ON DELETE CASCADE,
  bytes BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  blob_id TEXT NOT NULL REFERENCES file_blobs(id)
);
CREATE INDEX upload_parts_by_upload ON upload_parts (upload_id);
`;
