/**
 * Stored responses and conversations (docs/decisions.md "Responses and conversations"). Items and
 * Response bodies are JSON. A response's `input` holds only the items its own request added: a
 * `previous_response_id` chain is replayed by walking `previous_response_id` back to its root.
 * Conversation items are ordered by `seq`, which also serves the list's `after` cursor. An item id is not
 * unique within a conversation: a client may send back an output item (with its id) as input.
 */
export const migration009 = `
CREATE TABLE responses (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL REFERENCES projects(id),
  workspace_id TEXT,
  previous_response_id TEXT,
  conversation_id TEXT,
  status TEXT NOT NULL,
  input TEXT NOT NULL,
  body TEXT NOT NULL,
  created_at INTEGER NOT NULL
);

CREATE TABLE conversations (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL REFERENCES projects(id),
  workspace_id TEXT,
  metadata TEXT NOT NULL,
  created_at INTEGER NOT NULL
);

CREATE TABLE conversation_items (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL,
  conversation_id TEXT NOT NULL,
  item TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX conversation_items_order ON conversation_items(conversation_id, seq);
CREATE INDEX conversation_items_id ON conversation_items(conversation_id, id);
`;
