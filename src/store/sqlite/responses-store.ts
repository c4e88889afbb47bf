/**
 * The responses port (core/store/responses-store.ts) over the instance's SQLite file: the synchronous
 * repos (responses-repo.ts, conversations-repo.ts) underneath, answered as settled promises. Their events
 * go through `outbox`, which must be on the same connection as `db` (the event commits with the row).
 */
import type { ResponsesStore } from '../../core/store/responses-store.js';
import type { EventOutbox } from '../../core/webhooks/outbox.js';
import { createConversationsRepo } from '../conversations-repo.js';
import type { Db } from '../db.js';
import { createResponsesRepo } from '../responses-repo.js';

/** `owner`: this gateway instance's id in `db`'s registry; null (single-instance tests) writes rows any recovery may take. */
export function createSqliteResponsesStore(db: Db, outbox: EventOutbox, owner: string | null = null): ResponsesStore {
  const responses = createResponsesRepo(db, outbox, owner);
  const conversations = createConversationsRepo(db, outbox);
  return {
    responses: {
      get: async (projectId, id) => responses.get(projectId, id),
      finish: async (f) => responses.finish(f),
      delete: async (projectId, id) => responses.delete(projectId, id),
      queue: async (record) => responses.queue(record),
      transition: async (projectId, id, status, body) => responses.transition(projectId, id, status, body),
      failRunning: async (error, whose) => responses.failRunning(error, whose),
      watchCancels: () => () => undefined,
    },
    conversations: {
      create: async (c, items) => conversations.create(c, items),
      get: async (projectId, id) => conversations.get(projectId, id),
      updateMetadata: async (projectId, id, metadata) => conversations.updateMetadata(projectId, id, metadata),
      delete: async (projectId, id) => conversations.delete(projectId, id),
      addItems: async (conversationId, items, createdAt) => conversations.addItems(conversationId, items, createdAt),
      listItems: async (conversationId, query) => conversations.listItems(conversationId, query),
      countItems: async (conversationId) => conversations.countItems(conversationId),
      contextItems: async (conversationId, limit) => conversations.contextItems(conversationId, limit),
      getItem: async (conversationId, itemId) => conversations.getItem(conversationId, itemId),
      deleteItem: async (conversationId, itemId) => conversations.deleteItem(conversationId, itemId),
    },
  };
}
