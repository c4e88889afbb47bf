/**
 * Batches (issue 14, docs/decisions.md "Batches"). A batch row holds the OpenAI Batch object's fields and
 * who runs it (the creating key and the workspace it named); `seq` orders a project's batches for the
 * list's cursor. Each input line is a row of `batch_lines` once the batch is validated: `state` is
 * pending, running (claimed: committed before the line is dispatched) or done (its outcome recorded).
 * `not_before` defers a line refused by a rate limiter. Times are Unix milliseconds.
 */
export const migration011 = `
CREATE TABLE batches (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL REFERENCES projects(id),
  key_id TEXT NOT NULL,
  workspace_named TEXT,
  workspace_named_by TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  input_file_id TEXT NOT NULL,
  completion_window TEXT NOT NULL,
  status TEXT NOT NULL,
  metadata TEXT,
  errors TEXT,
  output_file_id TEXT,
  error_file_id TEXT,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  in_progress_at INTEGER,
  finalizing_at INTEGER,
  completed_at INTEGER,
  failed_at INTEGER,
  expired_at INTEGER,
  cancelling_at INTEGER,
  cancelled_at INTEGER
);
CREATE INDEX batches_by_project ON batches (project_id, seq);
CREATE INDEX batches_live ON batches (status) WHERE status IN ('validating', 'in_progress', 'finalizing', 'cancelling');

CREATE TABLE batch_lines (
  batch_id TEXT NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  custom_id TEXT,
  body TEXT,
  state TEXT NOT NULL,
  not_before INTEGER NOT NULL DEFAULT 0,
  status_code INTEGER,
  request_id TEXT,
  response TEXT,
  error_code TEXT,
  error_message TEXT,
  PRIMARY KEY (batch_id, idx)
) WITHOUT ROWID;
CREATE INDEX batch_lines_pending ON batch_lines (batch_id, not_before, idx) WHERE state = 'pending';
CREATE INDEX batch_lines_running ON batch_lines (batch_id) WHERE state = 'running';
`;
