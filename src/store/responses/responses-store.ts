/**
 * The responses port (core/store/responses-store.ts), written once for SQLite and PostgreSQL (issue 33):
 * stored responses, and the conversation items a response appends in the transaction that stores it
 * (conversations-store.ts), each change with its webhook event. Replicas share them on PostgreSQL, so a
 * response stored through one is retrieved, continued or deleted through any other.
 *
 * A background response (routes/responses-background.ts) is a row from its creation: `queued`,
 * `in_progress`, then finished by an update that only a still running row takes (a cancelled one keeps
 * `cancelled`). Each row records the gateway instance that runs it (`owner_instance`, SQLite migration
 * 016): recovery fails only the running rows whose instance has no row left in `gateway_instances`, and
 * on PostgreSQL under `FOR UPDATE SKIP LOCKED`, so replicas recovering at the same moment fail each once.
 * A cancel or delete of a running one is a change notice (PostgreSQL): the replica running it aborts.
 */
import { sql, type Expression, type ExpressionBuilder, type Insertable, type Kysely, type SqlBool } from 'kysely';
import type { Item, ResponseFinish, ResponseRecord, ResponsesStore, RunningOwners, StoredResponse, StoredResponses } from '../../core/store/responses-store.js';
import type { EventType } from '../../core/webhooks/event-types.js';
import { fromJson, toJson } from '../json-column.js';
import type { ChangeNotices } from '../sql/change-notices.js';
import { LIMIT_ONE, sqlFor } from '../sql/sql-builder.js';
import { first, preparedRow, rows, run, type SqlProgram } from '../sql/sql-program.js';
import type { SqlRunner } from '../sql/sql-runner.js';
import type { TransactionEvents } from '../sql/transaction-events.js';
import { createConversations, insertItems } from './conversations-store.js';
import type { ResponsesTables } from './responses-tables.js';

/** The change notice of a running background response cancelled or deleted: the replica running it aborts its turn. */
export const RESPONSES_CANCELLED_TOPIC = 'responses.cancelled';

// Literals, not parameters: SQLite uses the partial index responses_running only when the query names its values.
const RUNNING = [sql.lit<'queued'>('queued'), sql.lit<'in_progress'>('in_progress')];

export interface ResponsesStoreDeps {
  readonly runner: SqlRunner;
  readonly events: TransactionEvents;
  readonly notices: ChangeNotices;
  /** This gateway instance's id; null (single-instance tests) writes rows any recovery may take. */
  readonly owner: string | null;
  /** The events' time (the gateway's clock, injectable in tests). */
  readonly now: () => number;
}

type Where = (eb: ExpressionBuilder<ResponsesTables, 'responses'>) => Expression<SqlBool>;

export function createResponsesStore(deps: ResponsesStoreDeps): ResponsesStore {
  const { db, dialect } = sqlFor<ResponsesTables>(deps.runner.dialect);
  return { responses: storedResponses(deps, db, dialect === 'postgres'), conversations: createConversations({ ...deps, db }) };
}

/** The stored body's JSON: as its writer serialized it, when it did. */
const bodyOf = (s: ResponseRecord): string => s.bodyJson ?? toJson(s.body);

const finishEvent = (f: ResponseFinish): EventType => (f.failed ? 'response.failed' : 'response.completed');

function storedResponses({ runner, events, notices, owner, now }: ResponsesStoreDeps, db: Kysely<ResponsesTables>, lockRows: boolean): StoredResponses {
  const running: Where = (eb) => eb('status', 'in', RUNNING);
  const runningOf: Record<RunningOwners, Where> = {
    abandoned: (eb) => eb.and([running(eb), eb.or([eb('owner_instance', 'is', null), eb('owner_instance', 'not in', eb.selectFrom('gateway_instances').select('id'))])]),
    mine: (eb) => eb.and([running(eb), owner === null ? eb('owner_instance', 'is', null) : eb('owner_instance', '=', owner)]),
  };
  // Once per stored Response: compiled once (building and compiling the insert cost more than running it).
  const insertRow = preparedRow((values: Insertable<ResponsesTables['responses']>) => db.insertInto('responses').values(values));
  const insert = (s: ResponseRecord) =>
    run(
      insertRow({
        id: s.id,
        project_id: s.projectId,
        workspace_id: s.workspaceId,
        previous_response_id: s.previousResponseId,
        conversation_id: s.conversationId,
        status: s.status,
        input: toJson(s.input),
        body: bodyOf(s),
        created_at: s.createdAt,
        owner_instance: owner,
      }),
    );

  function* transition(projectId: string, id: string, status: string, body: string): SqlProgram<boolean> {
    const changed = yield* run(db.updateTable('responses').set({ status, body }).where('project_id', '=', projectId).where('id', '=', id).where(running));
    return changed > 0;
  }

  function* finish(f: ResponseFinish): SqlProgram<void> {
    const s = f.store;
    if (f.background) {
      // Cancelled (or failed by a recovery) meanwhile: that outcome stands, and nothing else happens.
      if (!s || !(yield* transition(f.projectId, f.responseId, s.status, bodyOf(s)))) return;
    } else if (s) {
      yield* insert(s);
    }
    if (f.conversation) yield* insertItems(db, f.conversation.id, f.conversation.items, f.conversation.createdAt);
    yield* events.emit(f.projectId, finishEvent(f), { id: f.responseId }, now());
  }

  function* cancelled(projectId: string, id: string, status: string, body: Record<string, unknown>): SqlProgram<boolean> {
    const moved = yield* transition(projectId, id, status, toJson(body));
    if (moved && status === 'cancelled') yield* notices.notify(RESPONSES_CANCELLED_TOPIC);
    return moved;
  }

  function* remove(projectId: string, id: string): SqlProgram<boolean> {
    const gone = yield* first(db.deleteFrom('responses').where('project_id', '=', projectId).where('id', '=', id).returning('status'));
    if (gone?.status === 'queued' || gone?.status === 'in_progress') yield* notices.notify(RESPONSES_CANCELLED_TOPIC);
    return gone !== undefined;
  }

  function* failRunning(error: { code: string; message: string }, whose: RunningOwners): SqlProgram<number> {
    const select = db.selectFrom('responses').select(['project_id', 'id', 'body']).where(runningOf[whose]);
    const found = yield* rows(lockRows ? select.forUpdate().skipLocked() : select);
    for (const row of found) {
      yield* transition(row.project_id, row.id, 'failed', toJson({ ...fromJson<Record<string, unknown>>(row.body), status: 'failed', error }));
      yield* events.emit(row.project_id, 'response.failed', { id: row.id }, now());
    }
    return found.length;
  }

  return {
    async get(projectId, id) {
      const row = await runner.read(first(db.selectFrom('responses').select(['id', 'project_id', 'workspace_id', 'previous_response_id', 'status', 'input', 'body']).where('project_id', '=', projectId).where('id', '=', id)));
      return row ? storedResponseOf(row) : null;
    },
    // A foreground response neither stored nor in a conversation changes nothing but its event: with no
    // subscriber to it, no transaction at all (it was 5% of a streamed Responses turn's CPU, issue 35).
    // Either way the caller only awaits the outcome (its answer waits for it), so the lookup and the commit
    // are shared with the responses finishing in the same turn.
    async finish(f) {
      if (!f.background && !f.store && !f.conversation && (await events.goesNowhere(f.projectId, finishEvent(f)))) return;
      await runner.writeSoon(finish(f));
    },
    delete: (projectId, id) => runner.write(remove(projectId, id)),
    queue: async (record) => void (await runner.write(insert(record))),
    transition: (projectId, id, status, body) => runner.write(cancelled(projectId, id, status, body)),
    async failRunning(error, whose) {
      // Every heartbeat of every replica asks (routes/responses-background.ts): a plain read first, and a
      // transaction only when there is something to fail.
      const any = await runner.read(first(db.selectFrom('responses').select('id').where(runningOf[whose]).limit(LIMIT_ONE)));
      return any ? runner.write(failRunning(error, whose)) : 0;
    },
    watchCancels: (listener) => notices.watch(RESPONSES_CANCELLED_TOPIC, listener),
  };
}

function storedResponseOf(row: Pick<ResponsesTables['responses'], 'id' | 'project_id' | 'workspace_id' | 'previous_response_id' | 'status' | 'input' | 'body'>): StoredResponse {
  return {
    id: row.id,
    projectId: row.project_id,
    workspaceId: row.workspace_id,
    previousResponseId: row.previous_response_id,
    status: row.status,
    input: fromJson<Item[]>(row.input),
    body: fromJson<Record<string, unknown>>(row.body),
  };
}
