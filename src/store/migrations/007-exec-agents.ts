/**
 * The agents' half of the execution surface (docs/exec.md "Concepts", "Management routes"): join keys
 * and enrolled agents. Times are Unix milliseconds. Key values are never stored, only their SHA-256
 * (hex), looked up through the unique indexes when an agent connects.
 *
 * An agent is soft-deleted (`deleted_at`): invocations keep naming it, and its registration name is free
 * again, which is why the name is unique only among agents not deleted (partial index). `manifest` is the
 * last accepted `{tools: [...]}`, JSON, replaced at every enrollment; `workspace_ids` a JSON array (empty:
 * every workspace of the project). Whether an agent is online is not stored: it is a live connection to
 * one gateway process (src/exec/agents/), so a stored flag would be stale after any crash.
 */
export const migration007 = `
CREATE TABLE exec_join_keys (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL REFERENCES projects(id),
  name TEXT,
  key_hash TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL,
  revoked_at INTEGER
);
CREATE INDEX exec_join_keys_project ON exec_join_keys(project_id, seq);

CREATE TABLE exec_agents (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL REFERENCES projects(id),
  registration_name TEXT NOT NULL,
  description TEXT,
  workspace_ids TEXT NOT NULL,
  key_hash TEXT NOT NULL UNIQUE,
  join_key_id TEXT NOT NULL,
  manifest TEXT NOT NULL,
  manifest_hash TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  enrolled_at INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  deleted_at INTEGER
);
CREATE INDEX exec_agents_project ON exec_agents(project_id, seq);
CREATE UNIQUE INDEX exec_agents_live_name ON exec_agents(project_id, registration_name) WHERE deleted_at IS NULL;
`;
