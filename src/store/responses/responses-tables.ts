/**
 * The responses aggregate's tables, declared once for both backends: stored responses, conversations and
 * their items. Created by SQLite migrations 009 and 016 and PostgreSQL migration 006 (history: released
 * migrations are never edited); test/contract/store-schema.test.ts compares this declaration with both
 * live schemas. `input`, `body`, `metadata` and `item` are JSON text, read and written whole.
 */
import { generated, integer, maybeText, text, type GatewayInstancesRead, type TablesOf } from '../sql/table-schema.js';


export const RESPONSES_SCHEMA = {
  responses: {
    seq: generated(integer()),
    id: text(),
    project_id: text(),
    workspace_id: maybeText(),
    previous_response_id: maybeText(),
    conversation_id: maybeText(),
    status: text(),
    input: text(),
    body: text(),
    created_at: integer(),
    owner_instance: maybeText(),
  },
  conversations: {
    seq: generated(integer()),
    id: text(),
    project_id: text(),
    workspace_id: maybeText(),
    metadata: text(),
    created_at: integer(),
  },
  conversation_items: {
    // Orders a conversation's items (SQLite's rowid, PostgreSQL's sequence) and serves the `after` cursor.
    seq: generated(integer()),
    id: text(),
    conversation_id: text(),
    item: text(),
    created_at: integer(),
  },
} as const;

export type ResponsesTables = TablesOf<typeof RESPONSES_SCHEMA> & GatewayInstancesRead;
