/**
 * Conversations and their items (the conversations half of the responses port, core/store/
 * responses-store.ts), written once for SQLite and PostgreSQL: `conversation.created` and
 * `conversation.deleted` commit with their change. `seq` keeps the items in insertion order.
 */
import type { Kysely } from 'kysely';
import type { Item, ItemPage, StoredConversations } from '../../core/store/responses-store.js';
import { fromJson, toJson } from '../json-column.js';
import { first, rows, run, type SqlProgram } from '../sql/sql-program.js';
import type { SqlRunner } from '../sql/sql-runner.js';
import type { TransactionEvents } from '../sql/transaction-events.js';
import { LIMIT_ONE } from '../sql/sql-builder.js';
import type { ResponsesTables } from './responses-tables.js';

/** Items inserted per statement (4 parameters an item). */
const INSERT_CHUNK = 1000;

/** Appends items to a conversation; one multi-row insert keeps their order in `seq`. */
export function* insertItems(db: Kysely<ResponsesTables>, conversationId: string, items: readonly Item[], createdAt: number): SqlProgram<void> {
  for (let at = 0; at < items.length; at += INSERT_CHUNK) {
    const values = items.slice(at, at + INSERT_CHUNK).map((item) => ({ id: String(item.id), conversation_id: conversationId, item: toJson(item), created_at: createdAt }));
    yield* run(db.insertInto('conversation_items').values(values));
  }
}

const itemsOf = (found: readonly { item: string }[]): Item[] => found.map((r) => fromJson<Item>(r.item));

export interface ConversationsDeps {
  readonly runner: SqlRunner;
  readonly db: Kysely<ResponsesTables>;
  readonly events: TransactionEvents;
  readonly now: () => number;
}

export function createConversations({ runner, db, events, now }: ConversationsDeps): StoredConversations {
  const items = (conversationId: string) => db.selectFrom('conversation_items').where('conversation_id', '=', conversationId);

  function* create(...[c, first]: Parameters<StoredConversations['create']>): SqlProgram<void> {
    yield* run(db.insertInto('conversations').values({ id: c.id, project_id: c.projectId, workspace_id: c.workspaceId, metadata: toJson(c.metadata), created_at: c.createdAt }));
    yield* insertItems(db, c.id, first, c.createdAt);
    yield* events.emit(c.projectId, 'conversation.created', { id: c.id }, now());
  }

  function* remove(projectId: string, id: string): SqlProgram<boolean> {
    if ((yield* run(db.deleteFrom('conversations').where('project_id', '=', projectId).where('id', '=', id))) === 0) return false;
    yield* run(db.deleteFrom('conversation_items').where('conversation_id', '=', id));
    yield* events.emit(projectId, 'conversation.deleted', { id }, now());
    return true;
  }

  function* listItems(...[conversationId, { limit, after, order }]: Parameters<StoredConversations['listItems']>): SqlProgram<ItemPage | null> {
    let from = order === 'asc' ? 0 : Number.MAX_SAFE_INTEGER;
    if (after !== null) {
      const found = yield* first(items(conversationId).select((eb) => eb.fn.min('seq').as('seq')).where('id', '=', after));
      if (found?.seq == null) return null;
      from = found.seq;
    }
    // One row more than asked: whether there is a next page.
    const page = yield* rows(
      items(conversationId)
        .select('item')
        .where('seq', order === 'asc' ? '>' : '<', from)
        .orderBy('seq', order)
        .limit(limit + 1),
    );
    return { items: itemsOf(page.slice(0, limit)), hasMore: page.length > limit };
  }

  return {
    create: (c, first) => runner.write(create(c, first)),
    async get(projectId, id) {
      const row = await runner.read(first(db.selectFrom('conversations').select(['id', 'project_id', 'workspace_id', 'metadata', 'created_at']).where('project_id', '=', projectId).where('id', '=', id)));
      if (!row) return null;
      return { id: row.id, projectId: row.project_id, workspaceId: row.workspace_id, metadata: fromJson<Record<string, string>>(row.metadata), createdAt: row.created_at };
    },
    updateMetadata: async (projectId, id, metadata) =>
      (await runner.read(run(db.updateTable('conversations').set({ metadata: toJson(metadata) }).where('project_id', '=', projectId).where('id', '=', id)))) > 0,
    delete: (projectId, id) => runner.write(remove(projectId, id)),
    addItems: (conversationId, added, createdAt) => runner.write(insertItems(db, conversationId, added, createdAt)),
    listItems: (conversationId, query) => runner.read(listItems(conversationId, query)),
    countItems: async (conversationId) => (await runner.read(first(items(conversationId).select((eb) => eb.fn.countAll<number>().as('n')))))?.n ?? 0,
    async contextItems(conversationId, limit) {
      const all = items(conversationId).select(['seq', 'item']);
      // The newest `limit`, oldest first.
      const query = limit === null ? all.orderBy('seq') : db.selectFrom(all.orderBy('seq', 'desc').limit(limit).as('newest')).select('item').orderBy('seq');
      return itemsOf(await runner.read(rows(query)));
    },
    async getItem(conversationId, itemId) {
      const row = await runner.read(first(items(conversationId).select('item').where('id', '=', itemId).orderBy('seq').limit(LIMIT_ONE)));
      return row ? fromJson<Item>(row.item) : null;
    },
    deleteItem: async (conversationId, itemId) => (await runner.read(run(db.deleteFrom('conversation_items').where('conversation_id', '=', conversationId).where('id', '=', itemId)))) > 0,
  };
}
