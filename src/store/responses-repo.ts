/**
 * Stored responses, and the conversation items a response appends, with their `response.*` event in the
 * same transaction (core/webhooks/outbox.ts).
 */
import type { EventOutbox } from '../core/webhooks/outbox.js';
import { writeTransaction, type Db } from './db.js';

type Item = Record<string, unknown>;

export interface StoredResponse {
  readonly id: string;
  readonly projectId: string;
  readonly workspaceId: string | null;
  readonly previousResponseId: string | null;
  readonly input: Item[];
  readonly body: Record<string, unknown>;
}

export interface ResponseRecord {
  readonly id: string;
  readonly projectId: string;
  readonly workspaceId: string | null;
  readonly previousResponseId: string | null;
  readonly conversationId: string | null;
  readonly status: string;
  readonly input: readonly Item[];
  readonly body: Record<string, unknown>;
  readonly createdAt: number;
}

export interface ResponseFinish {
  /** Stored (retrievable); false: `store: false`, only the event and the conversation append happen. */
  readonly store: ResponseRecord | null;
  readonly projectId: string;
  readonly responseId: string;
  readonly failed: boolean;
  /** Items appended to this conversation (the new input then the output), when the response used one. */
  readonly conversation: { readonly id: string; readonly items: readonly Item[]; readonly createdAt: number } | null;
}

export interface ResponsesRepo {
  get(projectId: string, id: string): StoredResponse | null;
  /** Finishes a response: row, conversation append and event commit together. */
  finish(f: ResponseFinish): void;
  delete(projectId: string, id: string): boolean;
}

interface Row {
  id: string;
  project_id: string;
  workspace_id: string | null;
  previous_response_id: string | null;
  input: string;
  body: string;
}

export function createResponsesRepo(db: Db, outbox: EventOutbox): ResponsesRepo {
  const select = db.prepare<[string, string], Row>('SELECT id, project_id, workspace_id, previous_response_id, input, body FROM responses WHERE project_id = ? AND id = ?');
  const insert = db.prepare(
    `INSERT INTO responses (id, project_id, workspace_id, previous_response_id, conversation_id, status, input, body, created_at)
     VALUES (@id, @projectId, @workspaceId, @previousResponseId, @conversationId, @status, @input, @body, @createdAt)`,
  );
  const insertItem = db.prepare('INSERT INTO conversation_items (id, conversation_id, item, created_at) VALUES (?, ?, ?, ?)');
  const remove = db.prepare('DELETE FROM responses WHERE project_id = ? AND id = ?');

  const finish = writeTransaction(db, (f: ResponseFinish) => {
    const s = f.store;
    if (s) {
      insert.run({ ...s, input: JSON.stringify(s.input), body: JSON.stringify(s.body) });
    }
    if (f.conversation) {
      for (const item of f.conversation.items) insertItem.run(String(item.id), f.conversation.id, JSON.stringify(item), f.conversation.createdAt);
    }
    outbox.emit(f.projectId, f.failed ? 'response.failed' : 'response.completed', { id: f.responseId });
  });

  return {
    get(projectId, id) {
      const row = select.get(projectId, id);
      if (!row) return null;
      return {
        id: row.id,
        projectId: row.project_id,
        workspaceId: row.workspace_id,
        previousResponseId: row.previous_response_id,
        input: JSON.parse(row.input) as Item[],
        body: JSON.parse(row.body) as Record<string, unknown>,
      };
    },
    finish,
    delete: (projectId, id) => remove.run(projectId, id).changes > 0,
  };
}
