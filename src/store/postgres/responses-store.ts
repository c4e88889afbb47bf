/**
 * The responses port on PostgreSQL (tables: migrations/006-responses.ts): replicas share stored responses
 * and conversations, so a response stored through one is retrieved, continued or deleted through any
 * other. Each state change appends its webhook event to the shared outbox tables in its own transaction
 * (webhooks-store.ts appendEventsIn), so the event commits with the row, once, and any replica's
 * dispatcher delivers it.
 *
 * Background responses are owned by the instance that runs them (`owner_instance`, its id in
 * `gateway_instances`, store/postgres/instances-registry.ts): recovery takes only the running rows whose
 * instance has no row left there (a sibling's sweep deleted it, as webhook claims are judged), under
 * `FOR UPDATE SKIP LOCKED`, so replicas recovering at the same moment fail each response once.
 */
import type pg from 'pg';
import type {
  ConversationRecord,
  Item,
  ResponseFinish,
  ResponseRecord,
  ResponsesStore,
  RunningFailure,
  RunningOwners,
  StoredConversations,
  StoredResponses,
} from '../../core/store/responses-store.js';
import { RESPONSE_COLUMNS, storedResponseOf, type ResponseRow } from '../responses-rows.js';
import type { PgStore } from './pg-store.js';
import { appendEventsIn, emitEventIn, eventsOf } from './webhooks-store.js';

export interface PgResponsesStoreOptions {
  /** This instance's id in `gateway_instances`; null (tests) writes rows any recovery may take. */
  readonly owner: string | null;
  /** The events' time (the gateway's clock, injectable in tests). */
  readonly now: () => number;
}

type Db = pg.Pool | pg.PoolClient;

/** The change notice of a running background response cancelled or deleted: the replica running it aborts its turn. */
export const RESPONSES_CANCELLED_TOPIC = 'responses.cancelled';

interface ConversationRow {
  id: string;
  project_id: string;
  workspace_id: string | null;
  metadata: string;
  created_at: number;
}

const RUNNING = "status IN ('queued', 'in_progress')";
const RUNNING_OF: Readonly<Record<RunningOwners, string>> = {
  abandoned: `${RUNNING} AND (owner_instance IS NULL OR NOT EXISTS (SELECT 1 FROM gateway_instances i WHERE i.id = responses.owner_instance))`,
  mine: `${RUNNING} AND owner_instance IS NOT DISTINCT FROM $1`,
};

async function insertItems(db: Db, conversationId: string, items: readonly Item[], createdAt: number): Promise<void> {
  if (items.length === 0) return;
  // One statement; WITH ORDINALITY keeps the items' order in `seq`.
  await db.query(
    `INSERT INTO conversation_items (id, conversation_id, item, created_at)
     SELECT u.id, $2, u.item, $3 FROM unnest($1::text[], $4::text[]) WITH ORDINALITY AS u(id, item, n) ORDER BY u.n`,
    [items.map((i) => String(i.id)), conversationId, createdAt, items.map((i) => JSON.stringify(i))],
  );
}

async function transition(db: Db, projectId: string, id: string, status: string, body: Record<string, unknown>): Promise<boolean> {
  const result = await db.query(`UPDATE responses SET status = $1, body = $2 WHERE project_id = $3 AND id = $4 AND ${RUNNING}`, [status, JSON.stringify(body), projectId, id]);
  return (result.rowCount ?? 0) > 0;
}

function pgResponses(store: PgStore, options: PgResponsesStoreOptions): StoredResponses {
  const { pool } = store;
  const insert = (db: Db, s: ResponseRecord): Promise<unknown> =>
    db.query(
      `INSERT INTO responses (id, project_id, workspace_id, previous_response_id, conversation_id, status, input, body, created_at, owner_instance)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [s.id, s.projectId, s.workspaceId, s.previousResponseId, s.conversationId, s.status, JSON.stringify(s.input), JSON.stringify(s.body), s.createdAt, options.owner],
    );

  return {
    async get(projectId, id) {
      const { rows } = await pool.query<ResponseRow>(`SELECT ${RESPONSE_COLUMNS} FROM responses WHERE project_id = $1 AND id = $2`, [projectId, id]);
      const row = rows[0];
      if (!row) return null;
      return storedResponseOf(row);
    },
    finish: (f: ResponseFinish) =>
      store.transaction(async (client) => {
        const s = f.store;
        if (f.background) {
          // Cancelled (or failed by a recovery) meanwhile: that outcome stands, and nothing else happens.
          if (!s || !(await transition(client, f.projectId, f.responseId, s.status, s.body))) return;
        } else if (s) {
          await insert(client, s);
        }
        if (f.conversation) await insertItems(client, f.conversation.id, f.conversation.items, f.conversation.createdAt);
        await emitEventIn(store, client, f.projectId, f.failed ? 'response.failed' : 'response.completed', { id: f.responseId }, options.now());
      }),
    async delete(projectId, id) {
      const { rows } = await pool.query<{ status: string }>('DELETE FROM responses WHERE project_id = $1 AND id = $2 RETURNING status', [projectId, id]);
      const status = rows[0]?.status;
      if (status === 'queued' || status === 'in_progress') await store.notifyChange(pool, RESPONSES_CANCELLED_TOPIC);
      return status !== undefined;
    },
    queue: async (record) => void (await insert(pool, record)),
    async transition(projectId, id, status, body) {
      const moved = await transition(pool, projectId, id, status, body);
      if (moved && status === 'cancelled') await store.notifyChange(pool, RESPONSES_CANCELLED_TOPIC);
      return moved;
    },
    watchCancels: (listener) => store.onChange(RESPONSES_CANCELLED_TOPIC, listener),
    async failRunning(error: RunningFailure, whose: RunningOwners) {
      const where = RUNNING_OF[whose];
      const params = whose === 'mine' ? [options.owner] : [];
      // Every heartbeat of every replica asks (routes/responses-background.ts): a plain read first, and a
      // transaction only when there is something to fail.
      const any = await pool.query(`SELECT 1 FROM responses WHERE ${where} LIMIT 1`, params);
      if (any.rowCount === 0) return 0;
      return store.transaction(async (client) => {
        const { rows } = await client.query<{ seq: number; project_id: string; id: string; body: string }>(
          `SELECT seq, project_id, id, body FROM responses WHERE ${where} FOR UPDATE SKIP LOCKED`,
          params,
        );
        if (rows.length === 0) return 0;
        const bodies = rows.map((r) => JSON.stringify({ ...(JSON.parse(r.body) as Record<string, unknown>), status: 'failed', error }));
        await client.query("UPDATE responses r SET status = 'failed', body = u.body FROM unnest($1::bigint[], $2::text[]) AS u(seq, body) WHERE r.seq = u.seq", [rows.map((r) => r.seq), bodies]);
        await appendEventsIn(store, client, rows.flatMap((r) => eventsOf(r.project_id, 'response.failed', { id: r.id }, options.now())));
        return rows.length;
      });
    },
  };
}

function pgConversations(store: PgStore, options: PgResponsesStoreOptions): StoredConversations {
  const { pool } = store;
  return {
    create: (c: ConversationRecord, items) =>
      store.transaction(async (client) => {
        await client.query('INSERT INTO conversations (id, project_id, workspace_id, metadata, created_at) VALUES ($1, $2, $3, $4, $5)', [
          c.id,
          c.projectId,
          c.workspaceId,
          JSON.stringify(c.metadata),
          c.createdAt,
        ]);
        await insertItems(client, c.id, items, c.createdAt);
        await emitEventIn(store, client, c.projectId, 'conversation.created', { id: c.id }, options.now());
      }),
    async get(projectId, id) {
      const { rows } = await pool.query<ConversationRow>('SELECT id, project_id, workspace_id, metadata, created_at FROM conversations WHERE project_id = $1 AND id = $2', [projectId, id]);
      const row = rows[0];
      if (!row) return null;
      return { id: row.id, projectId: row.project_id, workspaceId: row.workspace_id, metadata: JSON.parse(row.metadata) as Record<string, string>, createdAt: row.created_at };
    },
    async updateMetadata(projectId, id, metadata) {
      return ((await pool.query('UPDATE conversations SET metadata = $1 WHERE project_id = $2 AND id = $3', [JSON.stringify(metadata), projectId, id])).rowCount ?? 0) > 0;
    },
    delete: (projectId, id) =>
      store.transaction(async (client) => {
        if (((await client.query('DELETE FROM conversations WHERE project_id = $1 AND id = $2', [projectId, id])).rowCount ?? 0) === 0) return false;
        await client.query('DELETE FROM conversation_items WHERE conversation_id = $1', [id]);
        await emitEventIn(store, client, projectId, 'conversation.deleted', { id }, options.now());
        return true;
      }),
    addItems: (conversationId, items, createdAt) => insertItems(pool, conversationId, items, createdAt),
    async listItems(conversationId, { limit, after, order }) {
      let from = order === 'asc' ? 0 : Number.MAX_SAFE_INTEGER;
      if (after !== null) {
        const { rows } = await pool.query<{ seq: number | null }>('SELECT min(seq) AS seq FROM conversation_items WHERE conversation_id = $1 AND id = $2', [conversationId, after]);
        const seq = rows[0]?.seq ?? null;
        if (seq === null) return null;
        from = seq;
      }
      // One row more than asked: whether there is a next page.
      const sql = order === 'asc' ? 'seq > $2 ORDER BY seq ASC' : 'seq < $2 ORDER BY seq DESC';
      const { rows } = await pool.query<{ item: string }>(`SELECT item FROM conversation_items WHERE conversation_id = $1 AND ${sql} LIMIT $3`, [conversationId, from, limit + 1]);
      return { items: rows.slice(0, limit).map((r) => JSON.parse(r.item) as Item), hasMore: rows.length > limit };
    },
    async countItems(conversationId) {
      const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM conversation_items WHERE conversation_id = $1', [conversationId]);
      return rows[0]?.n ?? 0;
    },
    async contextItems(conversationId, limit) {
      // LIMIT NULL is no limit.
      const { rows } = await pool.query<{ item: string }>(
        'SELECT item FROM (SELECT seq, item FROM conversation_items WHERE conversation_id = $1 ORDER BY seq DESC LIMIT $2) newest ORDER BY seq ASC',
        [conversationId, limit],
      );
      return rows.map((r) => JSON.parse(r.item) as Item);
    },
    async getItem(conversationId, itemId) {
      const { rows } = await pool.query<{ item: string }>('SELECT item FROM conversation_items WHERE conversation_id = $1 AND id = $2 ORDER BY seq LIMIT 1', [conversationId, itemId]);
      const row = rows[0];
      return row ? (JSON.parse(row.item) as Item) : null;
    },
    async deleteItem(conversationId, itemId) {
      return ((await pool.query('DELETE FROM conversation_items WHERE conversation_id = $1 AND id = $2', [conversationId, itemId])).rowCount ?? 0) > 0;
    },
  };
}

export function createPgResponsesStore(store: PgStore, options: PgResponsesStoreOptions): ResponsesStore {
  return { responses: pgResponses(store, options), conversations: pgConversations(store, options) };
}
