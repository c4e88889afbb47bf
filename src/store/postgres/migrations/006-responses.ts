/**
 * PostgreSQL: stored responses, conversations and their items, as SQLite's migrations 009 and 016 (what
 * each column holds is said there; docs/decisions.md "Responses and conversations"). Items and Response
 * bodies are TEXT, read and written whole as in SQLite: JSONB would reorder the keys of the objects the API
 * returns. `seq` orders a conversation's items (SQLite's rowid) and serves the list's `after` cursor.
 * Project ids are not foreign keys (projects belong to the catalog group); `owner_instance` names a row of
 * `gateway_instances` (003-webhooks) without a foreign key: recovery fails the running responses whose
 * instance has no row there.
 */
export const pgMigrationResponses = `
CREATE TABLE responses (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL,
  workspace_id TEXT,
  previous_response_id TEXT,
  conversation_id TEXT,
  status TEXT NOT NULL,
  input TEXT NOT NULL,
  body TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  owner_instance TEXT
);
CREATE INDEX responses_running ON responses (owner_instance) WHERE status IN ('queued', 'in_progress');

CREATE TABLE conversations (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL,
  workspace_id TEXT,
  metadata TEXT NOT NULL,
  created_at BIGINT NOT NULL
);

CREATE TABLE conversation_items (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL,
  conversation_id TEXT NOT NULL,
  item TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE INDEX conversation_items_order ON conversation_items (conversation_id, seq);
CREATE INDEX conversation_items_id ON conversation_items (conversation_id, id);
`;
