/**
 * The exec invocations port on PostgreSQL (tables: migrations/009-exec.ts): invocations, approvals and
 * Idempotency-Keys shared by the replicas. Every state change is a guarded write (`WHERE status = <the
 * status read>`, approvals: state and stage; core/store/exec-invocations-store.ts) committed with its
 * events in one transaction (exec-events.ts), so of two replicas applying the same transition one wins and
 * writes the events once. A claim holds the invocation's row lock while it sends to the agent: a send that
 * fails rolls the claim back.
 *
 * Each committed change notifies `EXEC_INVOCATIONS_TOPIC`, so replicas serving readers of an invocation
 * (the SSE events route, long polls) or holding its agent's socket look at it again at once instead of at
 * their clock's next poll.
 */
import type pg from 'pg';
import type { Approval } from '../../core/exec/approval-machine.js';
import { deadlineOf, type Invocation, type InvocationStatus } from '../../core/exec/invocation-machine.js';
import type { Change, ExecInvocationsStore, Page, PageQuery, Sequenced } from '../../core/store/exec-invocations-store.js';
import { toApproval, toInvocation, type ApprovalRow, type InvocationRow } from '../exec-rows.js';
import { appendExecEvents } from './exec-events.js';
import type { PgStore } from './pg-store.js';

/** The change notice of a committed invocation or approval change. */
export const EXEC_INVOCATIONS_TOPIC = 'exec.invocations';

type Db = pg.Pool | pg.PoolClient;

const INV_COLUMNS = `seq, id, project_id, workspace_id, tool_name, arguments, status, risk, agent_id, approval_id, timeout_ms, exit_code,
  duration_ms, output, output_truncated, error_code, error_message, created_at, ready_at, dispatched_at, completed_at`;
const APP_COLUMNS = `seq, id, project_id, invocation_id, workspace_id, tool_name, risk, state, chain, stage, stage_deadline_at, decided_by, reason, created_at, decided_at,
  requested_by_key, requested_by_user`;
const ABANDONED = `(owner_instance IS NULL OR NOT EXISTS (SELECT 1 FROM gateway_instances i WHERE i.id = exec_invocations.owner_instance))`;

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

export interface PgExecInvocationsStoreOptions {
  /** This replica's id in `gateway_instances`; null (tests) writes rows any recovery may take. */
  readonly owner: string | null;
  /** The events' time (the gateway's clock, injectable in tests). */
  readonly now: () => number;
}

export function createPgExecInvocationsStore(store: PgStore, options: PgExecInvocationsStoreOptions): ExecInvocationsStore {
  const { pool } = store;
  const { owner, now: clock } = options;

  const insertInvocation = (db: Db, inv: Invocation) =>
    db.query(
      `INSERT INTO exec_invocations (id, project_id, workspace_id, tool_name, arguments, status, risk, agent_id, approval_id, timeout_ms, exit_code,
         duration_ms, output, output_truncated, error_code, error_message, created_at, ready_at, deadline_at, dispatched_at, completed_at, owner_instance)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)`,
      [inv.id, inv.projectId, inv.workspaceId, inv.toolName, JSON.stringify(inv.arguments), inv.status, inv.risk, inv.agentId, inv.approvalId, inv.timeoutMs,
        inv.exitCode, inv.durationMs, inv.output, inv.outputTruncated, inv.error?.code ?? null, inv.error?.message ?? null, inv.createdAt, inv.readyAt,
        deadlineOf(inv), inv.dispatchedAt, inv.completedAt, owner],
    );
  const insertApproval = (db: Db, a: Approval) =>
    db.query(
      `INSERT INTO exec_approvals (id, project_id, invocation_id, workspace_id, tool_name, risk, state, chain, stage, stage_deadline_at, decided_by, reason, created_at, decided_at,
         requested_by_key, requested_by_user)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
      [a.id, a.projectId, a.invocationId, a.workspaceId, a.toolName, a.risk, a.state, JSON.stringify(a.chain), a.stage, a.stageDeadlineAt, a.decidedBy, a.reason,
        a.createdAt, a.decidedAt, a.requester.keyId, a.requester.userId],
    );
  const invocationOf = async (db: Db, id: string): Promise<Invocation | null> => {
    const row = (await db.query<InvocationRow>(`SELECT ${INV_COLUMNS} FROM exec_invocations WHERE id = $1`, [id])).rows[0];
    return row ? toInvocation(row) : null;
  };

  /** The change's guarded writes, its events and the change notice; throws Rollback('taken') when a guard no longer holds. */
  const apply = async (client: pg.PoolClient, change: Change): Promise<void> => {
    const { invocation, approval } = change;
    if (invocation) {
      const to = invocation.to;
      const { rowCount } = await client.query(
        `UPDATE exec_invocations SET status = $3, agent_id = $4, exit_code = $5, duration_ms = $6, output = $7, output_truncated = $8, error_code = $9,
           error_message = $10, ready_at = $11, deadline_at = $12, dispatched_at = $13, completed_at = $14,
           owner_instance = CASE WHEN $3 IN ('dispatched', 'running') THEN $15 ELSE owner_instance END
         WHERE id = $1 AND status = $2`,
        [to.id, invocation.from, to.status, to.agentId, to.exitCode, to.durationMs, to.output, to.outputTruncated, to.error?.code ?? null, to.error?.message ?? null,
          to.readyAt, deadlineOf(to), to.dispatchedAt, to.completedAt, owner],
      );
      if (rowCount !== 1) throw new Rollback('taken');
    }
    if (approval) {
      const to = approval.to;
      const { rowCount } = await client.query(
        `UPDATE exec_approvals SET state = $4, stage = $5, stage_deadline_at = $6, decided_by = $7, reason = $8, decided_at = $9
         WHERE id = $1 AND state = $2 AND stage = $3`,
        [to.id, approval.from.state, approval.from.stage, to.state, to.stage, to.stageDeadlineAt, to.decidedBy, to.reason, to.decidedAt],
      );
      if (rowCount !== 1) throw new Rollback('taken');
    }
    await appendExecEvents(store, client, change.projectId, change.events, clock());
    await store.notifyChange(client, EXEC_INVOCATIONS_TOPIC);
  };

  /** A listing page, newest first, from before the `after` row's seq. */
  const page = async <R extends { seq: number }, T>(table: string, columns: string, stateColumn: string, projectId: string, q: PageQuery, map: (r: R) => T): Promise<Page<T> | null> => {
    let before = Number.MAX_SAFE_INTEGER;
    if (q.after !== null) {
      const seq = (await pool.query<{ seq: number }>(`SELECT seq FROM ${table} WHERE project_id = $1 AND id = $2`, [projectId, q.after])).rows[0]?.seq;
      if (seq === undefined) return null;
      before = seq;
    }
    const where = ['project_id = $1', 'seq < $2'];
    const params: unknown[] = [projectId, before];
    if (q.status !== null) {
      params.push(q.status);
      where.push(`${stateColumn} = $${params.length}`);
    }
    if (q.workspaceIds !== null) {
      params.push([...q.workspaceIds]);
      where.push(`workspace_id = ANY($${params.length}::text[])`);
    }
    params.push(q.limit + 1);
    const { rows } = await pool.query<R>(`SELECT ${columns} FROM ${table} WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT $${params.length}`, params);
    return { items: rows.slice(0, q.limit).map(map), hasMore: rows.length > q.limit };
  };

  const sequenced = (rows: InvocationRow[]): Sequenced[] => rows.map((r) => ({ seq: r.seq, invocation: toInvocation(r) }));

  return {
    create: (inv, approval, events, idem, now) =>
      store.transaction(async (client) => {
        if (idem) {
          // The key's primary key decides between concurrent POSTs on any replica; an expired key is taken over.
          const claimed = await client.query(
            `INSERT INTO exec_idempotency_keys (project_id, key, body_hash, invocation_id, expires_at) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (project_id, key) DO UPDATE SET body_hash = excluded.body_hash, invocation_id = excluded.invocation_id, expires_at = excluded.expires_at
             WHERE exec_idempotency_keys.expires_at <= $6`,
            [inv.projectId, idem.key, idem.bodyHash, inv.id, idem.expiresAt, now],
          );
          if (claimed.rowCount === 0) {
            const held = (
              await client.query<{ body_hash: string; invocation_id: string }>('SELECT body_hash, invocation_id FROM exec_idempotency_keys WHERE project_id = $1 AND key = $2', [
                inv.projectId,
                idem.key,
              ])
            ).rows[0];
            const first = held ? await invocationOf(client, held.invocation_id) : null;
            if (!held || held.body_hash !== idem.bodyHash || !first) return { kind: 'conflict' };
            return { kind: 'replayed', invocation: first };
          }
        }
        await insertInvocation(client, inv);
        if (approval) await insertApproval(client, approval);
        await appendExecEvents(store, client, inv.projectId, events, now);
        await store.notifyChange(client, EXEC_INVOCATIONS_TOPIC);
        return { kind: 'created' };
      }),
    async idempotencyKey(projectId, key, now) {
      const held = (
        await pool.query<{ body_hash: string; invocation_id: string }>(
          'SELECT body_hash, invocation_id FROM exec_idempotency_keys WHERE project_id = $1 AND key = $2 AND expires_at > $3',
          [projectId, key, now],
        )
      ).rows[0];
      return held ? { bodyHash: held.body_hash, invocationId: held.invocation_id } : null;
    },
    commit: async (change) => (await settled(store.transaction((client) => apply(client, change)))) !== 'taken',
    claim: (change, send) =>
      settled(
        store.transaction(async (client): Promise<'claimed'> => {
          await apply(client, change);
          if (!send()) throw new Rollback('unsent');
          return 'claimed';
        }),
      ),
    invocation: (id) => invocationOf(pool, id),
    async approval(id) {
      const row = (await pool.query<ApprovalRow>(`SELECT ${APP_COLUMNS} FROM exec_approvals WHERE id = $1`, [id])).rows[0];
      return row ? toApproval(row) : null;
    },
    listInvocations: (projectId, q) => page<InvocationRow, Invocation>('exec_invocations', INV_COLUMNS, 'status', projectId, q, toInvocation),
    listApprovals: (projectId, q) => page<ApprovalRow, Approval>('exec_approvals', APP_COLUMNS, 'state', projectId, q, toApproval),
    dueInvocations: async (now, limit) =>
      (
        await pool.query<InvocationRow>(`SELECT ${INV_COLUMNS} FROM exec_invocations WHERE deadline_at IS NOT NULL AND deadline_at <= $1 ORDER BY deadline_at LIMIT $2`, [
          now,
          limit,
        ])
      ).rows.map(toInvocation),
    dueApprovals: async (now, limit) =>
      (
        await pool.query<ApprovalRow>(`SELECT ${APP_COLUMNS} FROM exec_approvals WHERE state = 'pending' AND stage_deadline_at <= $1 ORDER BY stage_deadline_at LIMIT $2`, [
          now,
          limit,
        ])
      ).rows.map(toApproval),
    withStatus: async (status, afterSeq, limit) =>
      sequenced((await pool.query<InvocationRow>(`SELECT ${INV_COLUMNS} FROM exec_invocations WHERE status = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [status, afterSeq, limit])).rows),
    failAbandoned: (status, afterSeq, limit, fail) =>
      store.transaction(async (client) => {
        // SKIP LOCKED: a replica recovering at the same moment takes other rows instead of failing these twice.
        const { rows } = await client.query<InvocationRow>(
          `SELECT ${INV_COLUMNS} FROM exec_invocations WHERE status = $1 AND seq > $2 AND ${ABANDONED} ORDER BY seq LIMIT $3 FOR UPDATE SKIP LOCKED`,
          [status, afterSeq, limit],
        );
        const batch = sequenced(rows);
        for (const { invocation } of batch) {
          const change = fail(invocation);
          if (!change) continue;
          // A savepoint per row: a guard that no longer holds undoes that row's change only.
          await client.query('SAVEPOINT recover_row');
          try {
            await apply(client, change);
            await client.query('RELEASE SAVEPOINT recover_row');
          } catch (err) {
            if (!(err instanceof Rollback)) throw err;
            await client.query('ROLLBACK TO SAVEPOINT recover_row');
          }
        }
        return batch;
      }),
    activeOfAgent: async (agentId) =>
      (await pool.query<InvocationRow>(`SELECT ${INV_COLUMNS} FROM exec_invocations WHERE status IN ('dispatched', 'running') AND agent_id = $1`, [agentId])).rows.map(
        toInvocation,
      ),
    async statusesOf(ids) {
      if (ids.length === 0) return [];
      const { rows } = await pool.query<{ id: string; status: string; agent_id: string | null }>('SELECT id, status, agent_id FROM exec_invocations WHERE id = ANY($1::text[])', [
        [...ids],
      ]);
      return rows.map((r) => ({ id: r.id, status: r.status as InvocationStatus, agentId: r.agent_id }));
    },
    dropExpiredKeys: async (now) => (await pool.query('DELETE FROM exec_idempotency_keys WHERE expires_at <= $1', [now])).rowCount ?? 0,
  };
}
