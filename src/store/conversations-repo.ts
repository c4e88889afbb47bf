/**
 * Conversations and their items, with `conversation.created` / `conversation.deleted` in the same
 * transaction as the change (core/webhooks/outbox.ts).
 */
import type { ConversationRecord, Item, ItemPage } from '../core/store/responses-store.js';
import type { EventOutbox } from '../core/webhooks/outbox.js';
import { writeTransaction, type Db } from './db.js';

export type { ConversationRecord, ItemPage } from '../core/store/responses-store.js';

export interface ConversationsRepo {
  create(c: ConversationRecord, items: readonly Item[]): void;
  get(projectId: string, id: string): ConversationRecord | null;
  updateMetadata(projectId: string, id: string, metadata: Record<string, string>): boolean;
  delete(projectId: string, id: string): boolean;
  addItems(conversationId: string, items: readonly Item[], createdAt: number): void;
  /** `after`: an item id; order by insertion. null when `after` names no item of the conversation. */
  listItems(conversationId: string, options: { limit: number; after: string | null; order: 'asc' | 'desc' }): ItemPage | null;
  countItems(conversationId: string): number;
  /** The newest `limit` items (all when null), oldest first: a response's context. */
  contextItems(conversationId: string, limit: number | null): Item[];
  getItem(conversationId: string, itemId: string): Item | null;
  deleteItem(conversationId: string, itemId: string): boolean;
}

interface ConversationRow {
  id: string;
  project_id: string;
  workspace_id: string | null;
  metadata: string;
  created_at: number;
}

export function createConversationsRepo(db: Db, outbox: EventOutbox): ConversationsRepo {
  const insert = db.prepare('INSERT INTO conversations (id, project_id, workspace_id, metadata, created_at) VALUES (?, ?, ?, ?, ?)');
  const select = db.prepare<[string, string], ConversationRow>('SELECT id, project_id, workspace_id, metadata, created_at FROM conversations WHERE project_id = ? AND id = ?');
  const update = db.prepare('UPDATE conversations SET metadata = ? WHERE project_id = ? AND id = ?');
  const remove = db.prepare('DELETE FROM conversations WHERE project_id = ? AND id = ?');
  const removeItems = db.prepare('DELETE FROM conversation_items WHERE conversation_id = ?');
  const insertItem = db.prepare('INSERT INTO conversation_items (id, conversation_id, item, created_at) VALUES (?, ?, ?, ?)');
  const seqOf = db.prepare<[string, string], { seq: number }>('SELECT min(seq) AS seq FROM conversation_items WHERE conversation_id = ? AND id = ? HAVING count(*) > 0');
  const pageAsc = db.prepare<[string, number, number], { item: string }>('SELECT item FROM conversation_items WHERE conversation_id = ? AND seq > ? ORDER BY seq ASC LIMIT ?');
  const pageDesc = db.prepare<[string, number, number], { item: string }>('SELECT item FROM conversation_items WHERE conversation_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?');
  const count = db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM conversation_items WHERE conversation_id = ?');
  const newest = db.prepare<[string, number], { item: string }>('SELECT item FROM (SELECT seq, item FROM conversation_items WHERE conversation_id = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq ASC');
  const selectItem = db.prepare<[string, string], { item: string }>('SELECT item FROM conversation_items WHERE conversation_id = ? AND id = ?');
  const removeItem = db.prepare('DELETE FROM conversation_items WHERE conversation_id = ? AND id = ?');

  const addItems = writeTransaction(db, (conversationId: string, items: readonly Item[], createdAt: number) => {
    for (const item of items) insertItem.run(String(item.id), conversationId, JSON.stringify(item), createdAt);
  });
  const create = writeTransaction(db, (c: ConversationRecord, items: readonly Item[]) => {
    insert.run(c.id, c.projectId, c.workspaceId, JSON.stringify(c.metadata), c.createdAt);
    addItems(c.id, items, c.createdAt);
    outbox.emit(c.projectId, 'conversation.created', { id: c.id });
  });
  const del = writeTransaction(db, (projectId: string, id: string): boolean => {
    if (remove.run(projectId, id).changes === 0) return false;
    removeItems.run(id);
    outbox.emit(projectId, 'conversation.deleted', { id });
    return true;
  });

  return {
    create,
    get(projectId, id) {
      const row = select.get(projectId, id);
      if (!row) return null;
      return { id: row.id, projectId: row.project_id, workspaceId: row.workspace_id, metadata: JSON.parse(row.metadata) as Record<string, string>, createdAt: row.created_at };
    },
    updateMetadata: (projectId, id, metadata) => update.run(JSON.stringify(metadata), projectId, id).changes > 0,
    delete: del,
    addItems,
    listItems(conversationId, { limit, after, order }) {
      let from = order === 'asc' ? 0 : Number.MAX_SAFE_INTEGER;
      if (after !== null) {
        const row = seqOf.get(conversationId, after);
        if (!row) return null;
        from = row.seq;
      }
      // One row more than asked: whether there is a next page.
      const rows = (order === 'asc' ? pageAsc : pageDesc).all(conversationId, from, limit + 1);
      return { items: rows.slice(0, limit).map((r) => JSON.parse(r.item) as Item), hasMore: rows.length > limit };
    },
    countItems: (conversationId) => count.get(conversationId)?.n ?? 0,
    contextItems: (conversationId, limit) => newest.all(conversationId, limit ?? -1).map((r) => JSON.parse(r.item) as Item),
    getItem(conversationId, itemId) {
      const row = selectItem.get(conversationId, itemId);
      return row ? (JSON.parse(row.item) as Item) : null;
    },
    deleteItem: (conversationId, itemId) => removeItem.run(conversationId, itemId).changes > 0,
  };
}
