/**
 * The semantic router (issue 5): project settings and rules, the profile-embedding cache, decision rows,
 * and the workspace fields SPEC behaviour 9 and Authentication 10 need.
 *
 * Workspace fields set through the management API carry a `*_set_at` stamp; config sync leaves a stamped
 * value alone, so a restart never undoes an API change (the file stays the source of the initial value).
 */
export const migration005 = `
CREATE TABLE semantic_router_settings (
  project_id TEXT PRIMARY KEY REFERENCES projects(id),
  -- The keys the project set (JSON object); an absent key follows the deployment default.
  settings TEXT NOT NULL,
  -- The rules in stored order (JSON array, response shape).
  rules TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);

-- Profile embeddings by SHA-256 of the text, per embedding model (endpoint id + upstream model name).
CREATE TABLE router_embeddings (
  model_key TEXT NOT NULL,
  text_hash TEXT NOT NULL,
  dimensions INTEGER NOT NULL,
  vector BLOB NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (model_key, text_hash)
) WITHOUT ROWID;

-- One row per routed turn (SPEC "Routing decision row"), pruned after 24 hours. query_preview is sealed
-- with AES-256-GCM (store/secret-box.ts, the request id as associated data); detail holds the other fields.
CREATE TABLE routing_decisions (
  request_id TEXT NOT NULL,
  project_id TEXT NOT NULL,
  workspace_id TEXT,
  created_at INTEGER NOT NULL,
  route_reason TEXT NOT NULL,
  query_preview TEXT NOT NULL,
  detail TEXT NOT NULL
);
CREATE INDEX routing_decisions_project_time ON routing_decisions(project_id, created_at);
CREATE INDEX routing_decisions_time ON routing_decisions(created_at);

ALTER TABLE workspaces ADD COLUMN operational INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workspaces ADD COLUMN pinned_endpoint_id TEXT;
ALTER TABLE workspaces ADD COLUMN routing_mode_set_at INTEGER;
ALTER TABLE projects ADD COLUMN default_workspace_set_at INTEGER;
`;
