/**
 * PostgreSQL: the execution surface, as SQLite's migrations 007, 008 and 016 (what each column holds is
 * said there): join keys, agents, invocations, approvals and Idempotency-Keys, shared by the replicas.
 * `owner_instance` is the replica that dispatched a dispatched or running invocation (its id in
 * `gateway_instances`, 003-webhooks): only it holds the agent's socket, and recovery fails the invocation
 * once it left that registry. `exec_agent_presence` says which replica holds which agent's socket now
 * (with the tools it offers), for the other replicas' dispatch; a row of a replica that left the
 * registry is ignored. Project ids are not foreign keys (catalog group).
 */
export const pgMigrationExec = `
CREATE TABLE exec_join_keys (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL,
  name TEXT,
  key_hash TEXT NOT NULL UNIQUE,
  created_at BIGINT NOT NULL,
  revoked_at BIGINT
);
CREATE INDEX exec_join_keys_project ON exec_join_keys (project_id, seq);

CREATE TABLE exec_agents (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL,
  registration_name TEXT NOT NULL,
  description TEXT,
  workspace_ids TEXT NOT NULL,
  key_hash TEXT NOT NULL UNIQUE,
  join_key_id TEXT NOT NULL,
  manifest TEXT NOT NULL,
  manifest_hash TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  enrolled_at BIGINT NOT NULL,
  last_seen_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  deleted_at BIGINT
);
CREATE INDEX exec_agents_project ON exec_agents (project_id, seq);
CREATE UNIQUE INDEX exec_agents_live_name ON exec_agents (project_id, registration_name) WHERE deleted_at IS NULL;

CREATE TABLE exec_invocations (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  arguments TEXT NOT NULL,
  status TEXT NOT NULL,
  risk TEXT NOT NULL,
  agent_id TEXT,
  approval_id TEXT,
  timeout_ms BIGINT NOT NULL,
  exit_code INTEGER,
  duration_ms BIGINT,
  output TEXT NOT NULL,
  output_truncated BOOLEAN NOT NULL,
  error_code TEXT,
  error_message TEXT,
  created_at BIGINT NOT NULL,
  ready_at BIGINT,
  deadline_at BIGINT,
  dispatched_at BIGINT,
  completed_at BIGINT,
  owner_instance TEXT
);
CREATE INDEX exec_invocations_project ON exec_invocations (project_id, seq);
CREATE INDEX exec_invocations_live ON exec_invocations (status, seq) WHERE status IN ('queued', 'dispatched', 'running');
CREATE INDEX exec_invocations_deadline ON exec_invocations (deadline_at) WHERE deadline_at IS NOT NULL;
CREATE INDEX exec_invocations_agent ON exec_invocations (agent_id) WHERE status IN ('dispatched', 'running');

CREATE TABLE exec_approvals (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL,
  invocation_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  risk TEXT NOT NULL,
  state TEXT NOT NULL,
  chain TEXT NOT NULL,
  stage INTEGER NOT NULL,
  stage_deadline_at BIGINT,
  decided_by TEXT,
  reason TEXT,
  created_at BIGINT NOT NULL,
  decided_at BIGINT
);
CREATE INDEX exec_approvals_project ON exec_approvals (project_id, seq);
CREATE INDEX exec_approvals_due ON exec_approvals (stage_deadline_at) WHERE state = 'pending';

CREATE TABLE exec_idempotency_keys (
  project_id TEXT NOT NULL,
  key TEXT NOT NULL,
  body_hash TEXT NOT NULL,
  invocation_id TEXT NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (project_id, key)
);
CREATE INDEX exec_idempotency_keys_expiry ON exec_idempotency_keys (expires_at);

CREATE TABLE exec_agent_presence (
  agent_id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  instance_id TEXT NOT NULL,
  registration_name TEXT NOT NULL,
  workspace_ids TEXT NOT NULL,
  tools TEXT NOT NULL,
  since BIGINT NOT NULL
);
CREATE INDEX exec_agent_presence_instance ON exec_agent_presence (instance_id);
`;
