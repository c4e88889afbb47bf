/**
 * Stored responses, and the conversation items a response appends, with their `response.*` event in the
 * same transaction (core/webhooks/outbox.ts). A background response (routes/responses-background.ts) is a
 * row from its creation: `queued`, `in_progress`, then finished by an update that only a still running
 * row takes (a cancelled one keeps `cancelled`). Each row records the gateway instance that runs it
 * (`owner_instance`, migration 016): recovery fails only running rows whose instance is gone (issue 12).
 */
import type { ResponseFinish, ResponseRecord, StoredResponse } from '../core/store/responses-store.js';
import type { EventOutbox } from '../core/webhooks/outbox.js';
import { writeTransaction, type Db } from './db.js';
import { RESPONSE_COLUMNS, storedResponseOf, type ResponseRow } from './responses-rows.js';

export type { ResponseFinish, ResponseRecord, StoredResponse } from '../core/store/responses-store.js';

export interface ResponsesRepo {
  get(projectId: string, id: string): StoredResponse | null;
  /** Finishes a response: row, conversation append and event commit together. */
  finish(f: ResponseFinish): void;
  delete(projectId: string, id: string): boolean;
  /** A background response's row, `queued`, before its turn starts (no event). */
  queue(record: ResponseRecord): void;
  /** Moves a running (queued or in-progress) background response to `status`; false: it was not running. */
  transition(projectId: string, id: string, status: string, body: Record<string, unknown>): boolean;
  /**
   * Background responses still running fail with `error`, each with its response.failed event
   * (docs/decisions.md "Background responses"): `abandoned`, those of gateway instances that are gone (at
   * start, and when a sibling is found dead); `mine`, this instance's (at a graceful stop). Returns how many.
   */
  failRunning(error: { code: string; message: string }, whose: 'abandoned' | 'mine'): number;
}

const RUNNING = "status IN ('queued', 'in_progress')";

/** `owner`: this gateway instance's id; null (single-instance unit tests) writes rows any recovery may take. */
export function createResponsesRepo(db: Db, outbox: EventOutbox, owner: string | null = null): ResponsesRepo {
  const select = db.prepare<[string, string], ResponseRow>(`SELECT ${RESPONSE_COLUMNS} FROM responses WHERE project_id = ? AND id = ?`);
  const insert = db.prepare(
    `INSERT INTO responses (id, project_id, workspace_id, previous_response_id, conversation_id, status, input, body, created_at, owner_instance)
     VALUES (@id, @projectId, @workspaceId, @previousResponseId, @conversationId, @status, @input, @body, @createdAt, @owner)`,
  );
  const insertItem = db.prepare('INSERT INTO conversation_items (id, conversation_id, item, created_at) VALUES (?, ?, ?, ?)');
  const remove = db.prepare('DELETE FROM responses WHERE project_id = ? AND id = ?');
  const update = db.prepare<[string, string, string, string]>(`UPDATE responses SET status = ?, body = ? WHERE project_id = ? AND id = ? AND ${RUNNING}`);
  const runningOf = {
    abandoned: db.prepare<[], { project_id: string; id: string; body: string }>(
      `SELECT project_id, id, body FROM responses WHERE ${RUNNING} AND (owner_instance IS NULL OR owner_instance NOT IN (SELECT id FROM gateway_instances))`,
    ),
    mine: db.prepare<[string | null], { project_id: string; id: string; body: string }>(`SELECT project_id, id, body FROM responses WHERE ${RUNNING} AND owner_instance IS ?`),
  };
  const transition = (projectId: string, id: string, status: string, body: Record<string, unknown>): boolean => update.run(status, JSON.stringify(body), projectId, id).changes > 0;

  const finish = writeTransaction(db, (f: ResponseFinish) => {
    const s = f.store;
    if (f.background) {
      // Cancelled (or failed at a restart) meanwhile: that outcome stands, and nothing else happens.
      if (!s || !transition(f.projectId, f.responseId, s.status, s.body)) return;
    } else if (s) {
      insert.run({ ...s, input: JSON.stringify(s.input), body: JSON.stringify(s.body), owner });
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
      return storedResponseOf(row);
    },
    finish,
    delete: (projectId, id) => remove.run(projectId, id).changes > 0,
    queue: writeTransaction(db, (s: ResponseRecord) => {
      insert.run({ ...s, input: JSON.stringify(s.input), body: JSON.stringify(s.body), owner });
    }),
    transition: writeTransaction(db, transition),
    failRunning: writeTransaction(db, (error: { code: string; message: string }, whose: 'abandoned' | 'mine') => {
      const rows = whose === 'mine' ? runningOf.mine.all(owner) : runningOf.abandoned.all();
      for (const row of rows) {
        const body = { ...(JSON.parse(row.body) as Record<string, unknown>), status: 'failed', error };
        transition(row.project_id, row.id, 'failed', body);
        outbox.emit(row.project_id, 'response.failed', { id: row.id });
      }
      return rows.length;
    }),
  };
}
