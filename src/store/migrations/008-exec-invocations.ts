/**
 * The invocations' half of the execution surface (docs/exec.md "Invocations", "Approvals",
 * "Durability"): invocations, their approvals and the Idempotency-Key record. Times are Unix
 * milliseconds; `arguments` and an approval's `chain` are JSON.
 *
 * `deadline_at` is when a queued, dispatched or running invocation times out (the start of its timeout
 * clock plus `timeout_ms`), and `stage_deadline_at` when a pending approval's current stage lapses: the
 * clock's poll reads both through partial indexes holding only the live rows.
 *
 * Idempotency keys are their own table, not a unique column of invocations: a key is kept 24 hours and
 * may then name a new invocation. Its primary key is what decides between concurrent identical POSTs;
 * expired keys are swept through the `expires_at` index.
 */
export const migration008 = `
CREATE TABLE exec_invocations (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL REFERENCES projects(id),
  workspace_id TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  arguments TEXT NOT NULL,
  status TEXT NOT NULL,
  risk TEXT NOT NULL,
  agent_id TEXT,
  approval_id TEXT,
  timeout_ms INTEGER NOT NULL,
  exit_code INTEGER,
  duration_ms INTEGER,
  output TEXT NOT NULL,
  output_truncated INTEGER NOT NULL,
  error_code TEXT,
  error_message TEXT,
  created_at INTEGER NOT NULL,
  ready_at INTEGER,
  deadline_at INTEGER,
  dispatched_at INTEGER,
  completed_at INTEGER
);
CREATE INDEX exec_invocations_project ON exec_invocations(project_id, seq);
CREATE INDEX exec_invocations_live ON exec_invocations(status, seq) WHERE status IN ('queued', 'dispatched', 'running');
CREATE INDEX exec_invocations_deadline ON exec_invocations(deadline_at) WHERE deadline_at IS NOT NULL;

CREATE TABLE exec_approvals (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL REFERENCES projects(id),
  invocation_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  risk TEXT NOT NULL,
  state TEXT NOT NULL,
  chain TEXT NOT NULL,
  stage INTEGER NOT NULL,
  stage_deadline_at INTEGER,
  decided_by TEXT,
  reason TEXT,
  created_at INTEGER NOT NULL,
  decided_at INTEGER
);
CREATE INDEX exec_approvals_project ON exec_approvals(project_id, seq);
CREATE INDEX exec_approvals_due ON exec_approvals(stage_deadline_at) WHERE state = 'pending';

CREATE TABLE exec_idempotency_keys (
  project_id TEXT NOT NULL,
  key TEXT NOT NULL,
  body_hash TEXT NOT NULL,
  invocation_id TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, key)
);
CREATE INDEX exec_idempotency_keys_expiry ON exec_idempotency_keys(expires_at);
`;
