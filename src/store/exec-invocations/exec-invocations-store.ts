/**
 * The exec invocations port (core/store/exec-invocations-store.ts), written once for SQLite and
 * PostgreSQL (issue 33): invocations, approvals and Idempotency-Keys, each method a program
 * (store/sql/sql-program.ts) its backend's runner drives.
 *
 * Every state change is a guarded write (`WHERE status = <the status read>`; approvals: state and stage)
 * committed with its `exec.*` events and a change notice in one transaction, so of two writers applying
 * the same transition one commits it with its events and the other learns it lost. A claim sends to the
 * agent inside its transaction (SQLite: the synchronous IMMEDIATE transaction; PostgreSQL: holding the
 * row's lock, before COMMIT): the loser of a race never sends, and a send that fails rolls the claim back.
 *
 * Each committed change notifies EXEC_INVOCATIONS_TOPIC (PostgreSQL), so replicas serving readers of an
 * invocation or holding its agent's socket look at it again at once instead of at their clock's next poll.
 */
import { sql, type Compilable, type Insertable, type Kysely } from 'kysely';
import type { Approval } from '../../core/exec/approval-machine.js';
import type { ExecEvent } from '../../core/exec/exec-events.js';
import type { Invocation } from '../../core/exec/invocation-machine.js';
import type { Change, ClaimOutcome, CreateOutcome, ExecInvocationsStore, IdempotencyRecord, Page, PageQuery, Sequenced } from '../../core/store/exec-invocations-store.js';
import { changeNotice } from '../sql/change-notices.js';
import { listOf, oneOf } from '../sql/one-of.js';
import { sqlFor } from '../sql/sql-builder.js';
import { first, preparedRow, rawQuery, rows, run, type SqlDialect, type SqlProgram } from '../sql/sql-program.js';
import type { SqlRunner } from '../sql/sql-runner.js';
import type { TransactionEvents } from '../sql/transaction-events.js';
import { approvalRow, approvalState, invocationRow, invocationState, toApproval, toInvocation, type InvocationRow } from './exec-invocations-rows.js';
import type { ExecInvocationsTables } from './exec-invocations-tables.js';

/** The change notice of a committed invocation or approval change. */
export const EXEC_INVOCATIONS_TOPIC = 'exec.invocations';

// Literals, not parameters: SQLite uses a partial index only when the query names its condition's value.
const PENDING = sql.lit<'pending'>('pending');
const OWNED = [sql.lit<'dispatched'>('dispatched'), sql.lit<'running'>('running')];
const isOwned = (status: Invocation['status']): boolean => status === 'dispatched' || status === 'running';

export interface ExecInvocationsStoreDeps {
  readonly runner: SqlRunner;
  readonly events: TransactionEvents;
  /** This gateway instance's id; null (single-instance unit tests) writes rows any recovery may take. */
  readonly owner: string | null;
  /** The events' time (the gateway's clock, injectable in tests). */
  readonly now: () => number;
}

/** Thrown inside a transaction to roll it back, caught outside it: the outcome to report. */
class Rollback extends Error {
  constructor(readonly outcome: 'taken' | 'unsent') {
    super(`rolled back: ${outcome}`);
  }
}

const settled = async <T>(p: Promise<T>): Promise<T | Rollback['outcome']> => {
  try {
    return await p;
  } catch (err) {
    if (err instanceof Rollback) return err.outcome;
    throw err;
  }
};

export function createExecInvocationsStore({ runner, events, owner, now }: ExecInvocationsStoreDeps): ExecInvocationsStore {
  const { db, dialect } = sqlFor<ExecInvocationsTables>(runner.dialect);
  const { invocationById, claimKey, insertInvocation, insertApproval, moveInvocation, moveOwnedInvocation, moveApproval } = requestStatements(db);
  const reads = execReads(db, dialect);
  const sequenced = (found: InvocationRow[]): Sequenced[] => found.map((r) => ({ seq: r.seq, invocation: toInvocation(r) }));

  function* emit(projectId: string, list: readonly ExecEvent[], at: number): SqlProgram<void> {
    for (const e of list) yield* events.emit(projectId, e.type, e.data, at);
    yield* changeNotice(EXEC_INVOCATIONS_TOPIC);
  }

  /** The change's guarded writes, its events and the change notice; throws Rollback('taken') when a guard no longer holds. */
  function* apply({ invocation, approval, projectId, events: list }: Change): SqlProgram<void> {
    if (invocation) {
      const move = { ...invocationState(invocation.to), id: invocation.to.id, from: invocation.from };
      // Only the dispatching instance holds the agent's socket: a move to dispatched or running records it.
      const changed = yield* run(isOwned(move.status) ? moveOwnedInvocation({ ...move, owner_instance: owner }) : moveInvocation(move));
      if (changed !== 1) throw new Rollback('taken');
    }
    if (approval) {
      const { from, to } = approval;
      const changed = yield* run(moveApproval({ ...approvalState(to), id: to.id, fromState: from.state, fromStage: from.stage }));
      if (changed !== 1) throw new Rollback('taken');
    }
    yield* emit(projectId, list, now());
  }

  /**
   * The key's primary key decides between concurrent POSTs (on any replica; on SQLite the write lock
   * orders processes sharing the file); an expired key is taken over.
   */
  function* create(inv: Invocation, approval: Approval | null, list: readonly ExecEvent[], idem: IdempotencyRecord | null, at: number): SqlProgram<CreateOutcome> {
    if (idem) {
      const claimed = yield* run(claimKey({ project_id: inv.projectId, key: idem.key, body_hash: idem.bodyHash, invocation_id: inv.id, expires_at: idem.expiresAt, now: at }));
      if (claimed === 0) {
        const held = yield* first(reads.heldKey(inv.projectId, idem.key));
        const firstRow = held ? yield* first(invocationById(held.invocation_id)) : undefined;
        if (!held || held.body_hash !== idem.bodyHash || !firstRow) return { kind: 'conflict' };
        return { kind: 'replayed', invocation: toInvocation(firstRow) };
      }
    }
    yield* run(insertInvocation(invocationRow(inv, owner)));
    if (approval) yield* run(insertApproval(approvalRow(approval)));
    yield* emit(inv.projectId, list, at);
    return { kind: 'created' };
  }

  function* claim(change: Change, send: () => boolean): SqlProgram<'claimed'> {
    yield* apply(change);
    if (!send()) throw new Rollback('unsent');
    return 'claimed';
  }

  function* failAbandoned(...[status, afterSeq, limit, fail]: Parameters<ExecInvocationsStore['failAbandoned']>): SqlProgram<Sequenced[]> {
    const batch = sequenced(yield* rows(reads.abandoned(status, afterSeq, limit)));
    for (const { invocation } of batch) {
      const change = fail(invocation);
      if (change) yield* savepointed(db, () => apply(change));
    }
    return batch;
  }

  return {
    create: (inv, approval, list, idem, at) => runner.write(create(inv, approval, list, idem, at)),
    async idempotencyKey(projectId, key, at) {
      const held = await runner.read(first(reads.heldKey(projectId, key)));
      return held && held.expires_at > at ? { bodyHash: held.body_hash, invocationId: held.invocation_id } : null;
    },
    commit: async (change) => (await settled(runner.write(apply(change)))) !== 'taken',
    claim: (change, send): Promise<ClaimOutcome> => settled(runner.write(claim(change, send))),
    invocation: async (id) => {
      const row = await runner.read(first(invocationById(id)));
      return row ? toInvocation(row) : null;
    },
    approval: async (id) => {
      const row = await runner.read(first(db.selectFrom('exec_approvals').selectAll().where('id', '=', id)));
      return row ? toApproval(row) : null;
    },
    listInvocations: (projectId, q) => runner.read(page(reads.invocationSeq(projectId, q.after), (before) => reads.invocations(projectId, q, before), q.limit, toInvocation)),
    listApprovals: (projectId, q) => runner.read(page(reads.approvalSeq(projectId, q.after), (before) => reads.approvals(projectId, q, before), q.limit, toApproval)),
    dueInvocations: async (at, limit) => (await runner.read(rows(reads.dueInvocations(at, limit)))).map(toInvocation),
    dueApprovals: async (at, limit) => (await runner.read(rows(reads.dueApprovals(at, limit)))).map(toApproval),
    withStatus: async (status, afterSeq, limit) => sequenced(await runner.read(rows(reads.withStatus(status, afterSeq, limit)))),
    failAbandoned: (...args) => runner.write(failAbandoned(...args)),
    activeOfAgent: async (agentId) => (await runner.read(rows(reads.activeOfAgent(agentId)))).map(toInvocation),
    async statusesOf(ids) {
      if (ids.length === 0) return [];
      const found = await runner.read(rows(db.selectFrom('exec_invocations').select(['id', 'status', 'agent_id']).where(oneOf(dialect, 'id', listOf(dialect, ids), 'text'))));
      return found.map((r) => ({ id: r.id, status: r.status, agentId: r.agent_id }));
    },
    dropExpiredKeys: (at) => runner.read(run(db.deleteFrom('exec_idempotency_keys').where('expires_at', '<=', at))),
  };
}

/**
 * The statements of create, claim and commit (one each per exec request), compiled once
 * (sql/fixed-shape.ts).
 */
function requestStatements(db: Kysely<ExecInvocationsTables>) {
  type InvocationMove = ReturnType<typeof invocationState> & { id: string; from: Invocation['status'] };
  type ApprovalMove = ReturnType<typeof approvalState> & { id: string; fromState: Approval['state']; fromStage: number };
  const byId = preparedRow(({ id }: { id: string }) => db.selectFrom('exec_invocations').selectAll().where('id', '=', id));
  return {
    invocationById: (id: string) => byId({ id }),
    /** An Idempotency-Key, unless another invocation holds it still (an expired key is taken over). */
    claimKey: preparedRow(({ now, ...key }: Insertable<ExecInvocationsTables['exec_idempotency_keys']> & { now: number }) =>
      db
        .insertInto('exec_idempotency_keys')
        .values(key)
        .onConflict((oc) =>
          oc
            .columns(['project_id', 'key'])
            .doUpdateSet((eb) => ({ body_hash: eb.ref('excluded.body_hash'), invocation_id: eb.ref('excluded.invocation_id'), expires_at: eb.ref('excluded.expires_at') }))
            .where('exec_idempotency_keys.expires_at', '<=', now),
        ),
    ),
    insertInvocation: preparedRow((row: ReturnType<typeof invocationRow>) => db.insertInto('exec_invocations').values(row)),
    insertApproval: preparedRow((row: ReturnType<typeof approvalRow>) => db.insertInto('exec_approvals').values(row)),
    moveInvocation: preparedRow(({ id, from, ...set }: InvocationMove) => db.updateTable('exec_invocations').set(set).where('id', '=', id).where('status', '=', from)),
    moveOwnedInvocation: preparedRow(({ id, from, ...set }: InvocationMove & { owner_instance: string | null }) =>
      db.updateTable('exec_invocations').set(set).where('id', '=', id).where('status', '=', from),
    ),
    moveApproval: preparedRow(({ id, fromState, fromStage, ...set }: ApprovalMove) =>
      db.updateTable('exec_approvals').set(set).where('id', '=', id).where('state', '=', fromState).where('stage', '=', fromStage),
    ),
  };
}

/** The listings and the clock's reads. */
function execReads(db: Kysely<ExecInvocationsTables>, dialect: SqlDialect) {
  const seqOf = (table: 'exec_invocations' | 'exec_approvals', projectId: string, after: string | null) =>
    after === null ? null : db.selectFrom(table).select('seq').where('project_id', '=', projectId).where('id', '=', after);
  const inWorkspaces = (q: PageQuery) => oneOf(dialect, 'workspace_id', listOf(dialect, q.workspaceIds ?? []), 'text');
  return {
    invocationSeq: (projectId: string, after: string | null) => seqOf('exec_invocations', projectId, after),
    approvalSeq: (projectId: string, after: string | null) => seqOf('exec_approvals', projectId, after),
    invocations: (projectId: string, q: PageQuery, before: number) =>
      db
        .selectFrom('exec_invocations')
        .selectAll()
        .where('project_id', '=', projectId)
        .where('seq', '<', before)
        .$if(q.status !== null, (qb) => qb.where('status', '=', q.status as Invocation['status']))
        .$if(q.workspaceIds !== null, (qb) => qb.where(inWorkspaces(q)))
        .orderBy('seq', 'desc')
        .limit(q.limit + 1),
    approvals: (projectId: string, q: PageQuery, before: number) =>
      db
        .selectFrom('exec_approvals')
        .selectAll()
        .where('project_id', '=', projectId)
        .where('seq', '<', before)
        .$if(q.status !== null, (qb) => qb.where('state', '=', q.status as Approval['state']))
        .$if(q.workspaceIds !== null, (qb) => qb.where(inWorkspaces(q)))
        .orderBy('seq', 'desc')
        .limit(q.limit + 1),
    dueInvocations: (at: number, limit: number) =>
      db.selectFrom('exec_invocations').selectAll().where('deadline_at', 'is not', null).where('deadline_at', '<=', at).orderBy('deadline_at').limit(limit),
    /**
     * Dispatched or running rows whose instance left the registry (or was never recorded). SKIP LOCKED
     * (PostgreSQL): a replica recovering at the same moment takes other rows instead of failing these
     * twice; SQLite's IMMEDIATE transaction is the lock.
     */
    abandoned(status: 'dispatched' | 'running', afterSeq: number, limit: number) {
      const query = db
        .selectFrom('exec_invocations')
        .selectAll()
        .where('status', '=', status)
        .where('seq', '>', afterSeq)
        .where((eb) => eb.or([eb('owner_instance', 'is', null), eb('owner_instance', 'not in', eb.selectFrom('gateway_instances').select('id'))]))
        .orderBy('seq')
        .limit(limit);
      return dialect === 'postgres' ? query.forUpdate().skipLocked() : query;
    },
    withStatus: (status: Invocation['status'], afterSeq: number, limit: number) =>
      db.selectFrom('exec_invocations').selectAll().where('status', '=', status).where('seq', '>', afterSeq).orderBy('seq').limit(limit),
    activeOfAgent: (agentId: string) => db.selectFrom('exec_invocations').selectAll().where('status', 'in', OWNED).where('agent_id', '=', agentId),
    heldKey: (projectId: string, key: string) =>
      db.selectFrom('exec_idempotency_keys').select(['body_hash', 'invocation_id', 'expires_at']).where('project_id', '=', projectId).where('key', '=', key),
    dueApprovals: (at: number, limit: number) =>
      db.selectFrom('exec_approvals').selectAll().where('state', '=', PENDING).where('stage_deadline_at', '<=', at).orderBy('stage_deadline_at').limit(limit),
  };
}

/** A listing page, newest first, from before the `after` row's seq; null when `after` names no row of the project. */
function* page<R, T>(after: Compilable<{ seq: number }> | null, list: (before: number) => Compilable<R>, limit: number, map: (r: R) => T): SqlProgram<Page<T> | null> {
  let before = Number.MAX_SAFE_INTEGER;
  if (after) {
    const found = yield* first(after);
    if (!found) return null;
    before = found.seq;
  }
  const found = yield* rows(list(before));
  return { items: found.slice(0, limit).map(map), hasMore: found.length > limit };
}

/** `step` in a savepoint of the program's transaction: a Rollback it throws undoes its writes only. */
function* savepointed(db: Kysely<ExecInvocationsTables>, step: () => SqlProgram<void>): SqlProgram<void> {
  yield* run(rawQuery(sql`SAVEPOINT recover_row`, db));
  try {
    yield* step();
  } catch (err) {
    if (!(err instanceof Rollback)) throw err;
    yield* run(rawQuery(sql`ROLLBACK TO SAVEPOINT recover_row`, db));
  }
  yield* run(rawQuery(sql`RELEASE SAVEPOINT recover_row`, db));
}
