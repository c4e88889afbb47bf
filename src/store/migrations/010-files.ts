/**
 * Files and uploads (issue 14, docs/decisions.md "Files and uploads"). The bytes live on disk under the
 * store's `files/` folder (store/files-store.ts); these rows are the metadata. Times are Unix milliseconds.
 * `seq` orders a project's files for the list's cursor (`after` names a file id). An upload's parts are
 * rows until the upload completes, is cancelled or expires; the part's bytes are a file named after its id.
 * Expired uploads are found through the partial index of pending ones (FilesStore.sweepExpired).
 */
export const migration010 = `
CREATE TABLE files (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL REFERENCES projects(id),
  filename TEXT NOT NULL,
  purpose TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX files_by_project ON files (project_id, seq);

CREATE TABLE uploads (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id),
  filename TEXT NOT NULL,
  purpose TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  mime_type TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  file_id TEXT
);
CREATE INDEX uploads_pending_expiry ON uploads (expires_at) WHERE status = 'pending';

CREATE TABLE upload_parts (
  id TEXT PRIMARY KEY,
  upload_id TEXT NOT NULL REFERENCES uploads(id) ON DELETE CASCADE,
  bytes INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX upload_parts_by_upload ON upload_parts (upload_id);
`;
