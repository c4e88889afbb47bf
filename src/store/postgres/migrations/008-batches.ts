/**
 * PostgreSQL: batches and their lines, as SQLite's migrations 011 and 016 (what each column holds is said
 * there). Replicas share them: a line is claimed by one replica (FOR UPDATE SKIP LOCKED in the claim's
 * transaction), `owner_instance` is that replica's id in `gateway_instances` (003-webhooks), and a running
 * line whose owner left that registry is failed "interrupted", never run again. `seq` orders batches for
 * the scheduler (oldest first) and a project's list. Project ids are not foreign keys (catalog group).
 */
export const pgMigrationBatches = `
CREATE TABLE batches (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL,
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
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  in_progress_at BIGINT,
  finalizing_at BIGINT,
  completed_at BIGINT,
  failed_at BIGINT,
  expired_at BIGINT,
  cancelling_at BIGINT,
  cancelled_at BIGINT
);
CREATE INDEX batches_by_project ON batches (project_id, seq);
CREATE INDEX batches_live ON batches (seq) WHERE status IN ('validating', 'in_progress', 'finalizing', 'cancelling');
CREATE INDEX batches_running ON batches (seq) WHERE status = 'in_progress';

CREATE TABLE batch_lines (
  batch_id TEXT NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  custom_id TEXT,
  body TEXT,
  state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'done')),
  not_before BIGINT NOT NULL DEFAULT 0,
  status_code INTEGER,
  request_id TEXT,
  response TEXT,
  error_code TEXT,
  error_message TEXT,
  owner_instance TEXT,
  PRIMARY KEY (batch_id, idx)
);
CREATE INDEX batch_lines_pending ON batch_lines (batch_id, idx) WHERE state = 'pending';
CREATE INDEX batch_lines_running ON batch_lines (batch_id) WHERE state = 'running';
CREATE INDEX batch_lines_owner ON batch_lines (owner_instance) WHERE state = 'running';
`;
