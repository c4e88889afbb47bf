/**
 * The batches port (core/store/batches-store.ts), written once for SQLite and PostgreSQL (issue 33): each
 * method is a program (store/sql/sql-program.ts) its backend's runner drives. Every state change that ends
 * a batch writes its webhook event in the same transaction, so an event is never lost nor sent for a
 * change that did not commit. The claim is the one query whose dialects differ (batches-claim.ts).
 */
import { sql, type Kysely } from 'kysely';
import { canMove } from '../../core/batches/batch-machine.js';
import type { BatchesStore, BatchRow, LineCounts, LineRow } from '../../core/store/batches-store.js';
import { sqlFor } from '../sql/sql-builder.js';
import { first, prepared, rows, run, truthy, type SqlProgram } from '../sql/sql-program.js';
import type { SqlRunner } from '../sql/sql-runner.js';
import type { TransactionEvents } from '../sql/transaction-events.js';
import { claimProgram, claimQueries } from './batches-claim.js';
import { STATUS_COLUMN, type BatchesTables } from './batches-tables.js';

/** The change notice that a batch was validated (PostgreSQL): every replica's scheduler claims at once. */
export const BATCH_LINES_TOPIC = 'batches.lines';

/** Lines inserted per statement at validation (a batch may hold 50,000; 7 parameters a line). */
const INSERT_CHUNK = 1000;

const LIVE = ['validating', 'in_progress', 'finalizing', 'cancelling'] as const;
// Literals, not parameters: SQLite uses a partial index only when the query names its condition's value.
const PENDING = sql.lit<'pending'>('pending');
const RUNNING = sql.lit<'running'>('running');
const DONE = sql.lit<'done'>('done');

export interface BatchesStoreDeps {
  readonly runner: SqlRunner;
  readonly events: TransactionEvents;
  /** This gateway instance's id; null (single-instance unit tests) writes rows any recovery may take. */
  readonly owner: string | null;
}

export function createBatchesStore({ runner, events, owner }: BatchesStoreDeps): BatchesStore {
  const { db, dialect } = sqlFor<BatchesTables>(runner.dialect);
  const q = batchQueries(db);
  const lockRow = dialect === 'postgres';
  const rowOf = (id: string, lock = false) => first(lock ? q.byIdLocked(id) : q.byId(id));
  const claim = claimQueries(db, dialect);

  function* validated(id: string, lines: Parameters<BatchesStore['validated']>[1], now: number): SqlProgram<boolean> {
    // The batch row's lock (PostgreSQL): a cancel, or another replica validating it, waits, then finds it moved.
    if ((yield* rowOf(id, lockRow))?.status !== 'validating') return false;
    for (let at = 0; at < lines.length; at += INSERT_CHUNK) {
      const values = lines.slice(at, at + INSERT_CHUNK).map((l, i) =>
        l.ok
          ? { batch_id: id, idx: at + i, custom_id: l.line.customId, body: l.line.body.toString('utf8'), state: 'pending' as const, error_code: null, error_message: null }
          : { batch_id: id, idx: at + i, custom_id: l.error.customId, body: null, state: 'done' as const, error_code: l.error.code, error_message: l.error.message },
      );
      yield* run(db.insertInto('batch_lines').values(values));
    }
    yield* run(db.updateTable('batches').set({ status: 'in_progress', in_progress_at: now }).where('id', '=', id));
    return true;
  }

  function* move(...[id, from, to, now, extras = {}]: Parameters<BatchesStore['move']>): SqlProgram<boolean> {
    const row = yield* rowOf(id, lockRow);
    if (!row || !from.includes(row.status) || !canMove(row.status, to)) return false;
    yield* run(db.updateTable('batches').set({ status: to, [STATUS_COLUMN[to]]: now }).where('id', '=', id));
    if (extras.files) yield* run(db.updateTable('batches').set({ output_file_id: extras.files.output, error_file_id: extras.files.error }).where('id', '=', id));
    const after = extras.event ? yield* rowOf(id) : undefined;
    const event = after && extras.event ? extras.event(after, yield* countsOf(id)) : null;
    if (event) yield* events.emit(row.project_id, event.type, event.data, now);
    return true;
  }

  function* countsOf(id: string): SqlProgram<LineCounts> {
    return (yield* first(q.counts(id))) ?? { total: 0, completed: 0, failed: 0, pending: 0, running: 0 };
  }

  function* activity(id: string): SqlProgram<{ pending: boolean; running: boolean }> {
    // Through the partial indexes: after every line the system asks whether its batch is done, and a full
    // count there made a batch cost the square of its line count (bench/RESULTS.md "openai-surface").
    const found = yield* first(q.activity(id));
    return { pending: truthy(found?.pending), running: truthy(found?.running) };
  }

  return {
    insert: (b) => runner.read(run(db.insertInto('batches').values({ ...b, status: 'validating' }))).then(() => undefined),
    get: (id) => runner.read(rowOf(id)).then((row) => row ?? null),
    page: (projectId, beforeSeq, limit) => runner.read(rows(q.page(projectId, Number.isFinite(beforeSeq) ? beforeSeq : Number.MAX_SAFE_INTEGER, limit))),
    live: () => runner.read(rows(db.selectFrom('batches').selectAll().where('status', 'in', LIVE).orderBy('seq'))),
    activity: (id) => runner.read(activity(id)),
    counts: (id) => runner.read(countsOf(id)),
    line: (id, idx) => runner.read(first(q.line(id, idx))).then((row) => row ?? null),
    doneLines: (id) => runner.read(rows(db.selectFrom('batch_lines').selectAll().where('batch_id', '=', id).where('state', '=', DONE).orderBy('idx'))),
    validated: (id, lines, now) => runner.write(validated(id, lines, now)),
    claim: (now) => runner.write(claimProgram(claim, owner, now)),
    async settle(id, idx, outcome) {
      const settled = outcome.kind === 'answered' ? q.settleAnswered(id, idx, outcome.statusCode, outcome.requestId, outcome.body) : q.settleError(id, idx, outcome.code, outcome.message);
      await runner.read(run(settled));
    },
    async defer(id, idx, notBefore) {
      await runner.read(run(q.defer(id, idx, notBefore)));
    },
    interruptRunning: (message) =>
      runner.read(
        run(
          db
            .updateTable('batch_lines')
            .set({ state: 'done', error_code: 'interrupted', error_message: message })
            .where('state', '=', RUNNING)
            .where((eb) => eb.or([eb('owner_instance', 'is', null), eb('owner_instance', 'not in', eb.selectFrom('gateway_instances').select('id'))])),
        ),
      ),
    move: (...args) => runner.write(move(...args)),
    async setErrors(id, errors) {
      await runner.read(run(db.updateTable('batches').set({ errors: JSON.stringify(errors) }).where('id', '=', id)));
    },
    expirePending: (id, message) =>
      runner.read(run(db.updateTable('batch_lines').set({ state: 'done', error_code: 'batch_expired', error_message: message }).where('batch_id', '=', id).where('state', '=', PENDING))),
  };
}

/** The queries taken per line or per move, compiled once (sql-program.ts `prepared`). */
function batchQueries(db: Kysely<BatchesTables>) {
  const isState = (state: typeof PENDING | typeof RUNNING) => sql<number>`coalesce(sum(case when state = ${state} then 1 else 0 end), 0)`;
  const lineOf = (id: string, idx: number) => db.updateTable('batch_lines').where('batch_id', '=', id).where('idx', '=', idx);
  return {
    byId: prepared((id: string) => db.selectFrom('batches').selectAll().where('id', '=', id)),
    byIdLocked: prepared((id: string) => db.selectFrom('batches').selectAll().where('id', '=', id).forUpdate()),
    page: prepared((projectId: string, beforeSeq: number, limit: number) =>
      db.selectFrom('batches').selectAll().where('project_id', '=', projectId).where('seq', '<', beforeSeq).orderBy('seq', 'desc').limit(limit),
    ),
    line: prepared((id: string, idx: number) => db.selectFrom('batch_lines').selectAll().where('batch_id', '=', id).where('idx', '=', idx)),
    settleAnswered: prepared((id: string, idx: number, status: number, requestId: string, body: string) =>
      lineOf(id, idx).set({ state: 'done', status_code: status, request_id: requestId, response: body }),
    ),
    settleError: prepared((id: string, idx: number, code: string, message: string) => lineOf(id, idx).set({ state: 'done', error_code: code, error_message: message })),
    defer: prepared((id: string, idx: number, notBefore: number) => lineOf(id, idx).set({ state: 'pending', not_before: notBefore })),
    counts: prepared((id: string) =>
      db
        .selectFrom('batch_lines')
        .select([
          sql<number>`count(*)`.as('total'),
          sql<number>`coalesce(sum(case when state = ${DONE} and status_code between 200 and 299 then 1 else 0 end), 0)`.as('completed'),
          sql<number>`coalesce(sum(case when state = ${DONE} and (status_code is null or status_code not between 200 and 299) then 1 else 0 end), 0)`.as('failed'),
          isState(PENDING).as('pending'),
          isState(RUNNING).as('running'),
        ])
        .where('batch_id', '=', id),
    ),
    activity: prepared((id: string) =>
      db.selectNoFrom((eb) => [
        eb.exists(eb.selectFrom('batch_lines').select(sql.lit(1).as('one')).where('batch_id', '=', id).where('state', '=', PENDING)).as('pending'),
        eb.exists(eb.selectFrom('batch_lines').select(sql.lit(1).as('one')).where('batch_id', '=', id).where('state', '=', RUNNING)).as('running'),
      ]),
    ),
  };
}

export type { BatchRow, LineRow };
