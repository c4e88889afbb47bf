/**
 * The SQL of invocations, approvals and Idempotency-Key records (migration 008). Every state change is
 * written together with the events it emits, in one transaction (docs/exec.md "Events"): `commit` takes
 * the records to save and the events, and the outbox writes the events on this same connection, inside
 * the transaction (store/webhook-outbox.ts runs its own as a savepoint of ours).
 *
 * A dispatched or running invocation records the gateway instance that dispatched it (`owner_instance`,
 * migration 016): its agent's results come back to that instance's socket only, so that instance alone can
 * finish it, and restart recovery fails it only once that instance is gone (store/instances-registry.ts).
 *
 * Several instances share the store and each acts on what it read a moment before (its clock's due rows,
 * its queued retries, an API call), so every write of a state change is guarded by the state it was read
 * in: `WHERE id = ? AND status = <the status read>` (approvals: state and stage). Statuses and stages only
 * move forward, so "still in the state I read" means "nobody changed it since". A write whose guard no
 * longer holds changes nothing and writes no event: of two instances applying the same transition, one
 * commits it with its events and the other learns it lost (issue 12).
 */
import type { Approval } from '../../core/exec/approval-machine.js';
import type { ExecEvent } from '../../core/exec/exec-events.js';
import { deadlineOf, type Invocation, type InvocationStatus } from '../../core/exec/invocation-machine.js';
import type { Change, ClaimOutcome, CreateOutcome, IdempotencyRecord, Page, PageQuery } from '../../core/store/exec-invocations-store.js';
import type { EventOutbox } from '../../core/webhooks/outbox.js';
import { writeTransaction, type Db } from '../db.js';
import { toInvocation, toApproval, type InvocationRow, type ApprovalRow } from '../exec-rows.js';
import { toJson } from '../json-column.js';

export type { Change, ClaimOutcome, CreateOutcome, IdempotencyRecord, Page, PageQuery } from '../../core/store/exec-invocations-store.js';

function invocationParams(inv: Invocation) {
  return {
    id: inv.id,
    projectId: inv.projectId,
    workspaceId: inv.workspaceId,
    toolName: inv.toolName,
    arguments: toJson(inv.arguments),
    status: inv.status,
    risk: inv.risk,
    agentId: inv.agentId,
    approvalId: inv.approvalId,
    timeoutMs: inv.timeoutMs,
    exitCode: inv.exitCode,
    durationMs: inv.durationMs,
    output: inv.output,
    outputTruncated: inv.outputTruncated ? 1 : 0,
    errorCode: inv.error?.code ?? null,
    errorMessage: inv.error?.message ?? null,
    createdAt: inv.createdAt,
    readyAt: inv.readyAt,
    deadlineAt: deadlineOf(inv),
    dispatchedAt: inv.dispatchedAt,
    completedAt: inv.completedAt,
  };
}

function approvalParams(a: Approval) {
  return {
    id: a.id,
    projectId: a.projectId,
    invocationId: a.invocationId,
    workspaceId: a.workspaceId,
    toolName: a.toolName,
    risk: a.risk,
    state: a.state,
    chain: toJson(a.chain),
    stage: a.stage,
    stageDeadlineAt: a.stageDeadlineAt,
    decidedBy: a.decidedBy,
    reason: a.reason,
    createdAt: a.createdAt,
    decidedAt: a.decidedAt,
    requestedByKey: a.requester.keyId,
    requestedByUser: a.requester.userId,
  };
}

/** A listing's filters as SQL conditions: the state column, and the workspaces the key may see. */
function narrow(where: string[], params: unknown[], stateColumn: 'status' | 'state', q: PageQuery): void {
  if (q.status !== null) {
    where.push(`${stateColumn} = ?`);
    params.push(q.status);
  }
  if (q.workspaceIds !== null) {
    // An empty list matches nothing (IN (NULL) is never true).
    where.push(`workspace_id IN (${q.workspaceIds.map(() => '?').join(', ') || 'NULL'})`);
    params.push(...q.workspaceIds);
  }
}

/** Thrown inside a transaction to roll it back, caught outside it: the outcome to report. */
class Rollback extends Error {
  constructor(readonly outcome: 'taken' | 'unsent') {
    super(`rolled back: ${outcome}`);
  }
}

export type InvocationStore = ReturnType<typeof createInvocationStore>;

/** `owner`: this gateway instance's id; null (single-instance unit tests) writes rows any recovery may take. */
export function createInvocationStore(db: Db, outbox: EventOutbox, owner: string | null = null) {
  const INV_COLUMNS = `seq, id, project_id, workspace_id, tool_name, arguments, status, risk, agent_id, approval_id, timeout_ms, exit_code,
    duration_ms, output, output_truncated, error_code, error_message, created_at, ready_at, dispatched_at, completed_at`;
  const APP_COLUMNS = `seq, id, project_id, invocation_id, workspace_id, tool_name, risk, state, chain, stage, stage_deadline_at, decided_by, reason, created_at, decided_at,
    requested_by_key, requested_by_user`;
  const insertInvocation = db.prepare(`
    INSERT INTO exec_invocations (id, project_id, workspace_id, tool_name, arguments, status, risk, agent_id, approval_id, timeout_ms, exit_code,
      duration_ms, output, output_truncated, error_code, error_message, created_at, ready_at, deadline_at, dispatched_at, completed_at, owner_instance)
    VALUES (@id, @projectId, @workspaceId, @toolName, @arguments, @status, @risk, @agentId, @approvalId, @timeoutMs, @exitCode,
      @durationMs, @output, @outputTruncated, @errorCode, @errorMessage, @createdAt, @readyAt, @deadlineAt, @dispatchedAt, @completedAt, @owner)`);
  const updateInvocation = db.prepare(`
    UPDATE exec_invocations SET status = @status, agent_id = @agentId, exit_code = @exitCode, duration_ms = @durationMs, output = @output,
      output_truncated = @outputTruncated, error_code = @errorCode, error_message = @errorMessage, ready_at = @readyAt, deadline_at = @deadlineAt,
      dispatched_at = @dispatchedAt, completed_at = @completedAt,
      owner_instance = CASE WHEN @status IN ('dispatched', 'running') THEN @owner ELSE owner_instance END
    WHERE id = @id AND status = @from`);
  const insertApproval = db.prepare(`
    INSERT INTO exec_approvals (id, project_id, invocation_id, workspace_id, tool_name, risk, state, chain, stage, stage_deadline_at, decided_by, reason, created_at, decided_at,
      requested_by_key, requested_by_user)
    VALUES (@id, @projectId, @invocationId, @workspaceId, @toolName, @risk, @state, @chain, @stage, @stageDeadlineAt, @decidedBy, @reason, @createdAt, @decidedAt,
      @requestedByKey, @requestedByUser)`);
  const updateApproval = db.prepare(`
    UPDATE exec_approvals SET state = @state, stage = @stage, stage_deadline_at = @stageDeadlineAt, decided_by = @decidedBy, reason = @reason,
      decided_at = @decidedAt WHERE id = @id AND state = @fromState AND stage = @fromStage`);
  const invocationById = db.prepare<[string], InvocationRow>(`SELECT ${INV_COLUMNS} FROM exec_invocations WHERE id = ?`);
  const approvalById = db.prepare<[string], ApprovalRow>(`SELECT ${APP_COLUMNS} FROM exec_approvals WHERE id = ?`);
  const seqOfInvocation = db.prepare<[string, string], { seq: number }>('SELECT seq FROM exec_invocations WHERE project_id = ? AND id = ?');
  const seqOfApproval = db.prepare<[string, string], { seq: number }>('SELECT seq FROM exec_approvals WHERE project_id = ? AND id = ?');
  const dueInvocations = db.prepare<[number, number], InvocationRow>(
    `SELECT ${INV_COLUMNS} FROM exec_invocations WHERE deadline_at IS NOT NULL AND deadline_at <= ? ORDER BY deadline_at LIMIT ?`,
  );
  const dueApprovals = db.prepare<[number, number], ApprovalRow>(
    `SELECT ${APP_COLUMNS} FROM exec_approvals WHERE state = 'pending' AND stage_deadline_at <= ? ORDER BY stage_deadline_at LIMIT ?`,
  );
  const withStatus = db.prepare<[string, number, number], InvocationRow>(
    `SELECT ${INV_COLUMNS} FROM exec_invocations WHERE status = ? AND seq > ? ORDER BY seq LIMIT ?`,
  );
  // Dispatched or running rows whose instance is no longer registered (or was never recorded).
  const abandoned = db.prepare<[string, number, number], InvocationRow>(
    `SELECT ${INV_COLUMNS} FROM exec_invocations WHERE status = ? AND seq > ?
      AND (owner_instance IS NULL OR owner_instance NOT IN (SELECT id FROM gateway_instances)) ORDER BY seq LIMIT ?`,
  );
  const statusesOf = db.prepare<[string], { id: string; status: string; agent_id: string | null }>(
    'SELECT id, status, agent_id FROM exec_invocations WHERE id IN (SELECT value FROM json_each(?))',
  );
  const activeOfAgent = db.prepare<[string], InvocationRow>(
    `SELECT ${INV_COLUMNS} FROM exec_invocations WHERE status IN ('dispatched', 'running') AND agent_id = ?`,
  );
  const keyRecord = db.prepare<[string, string], { body_hash: string; invocation_id: string; expires_at: number }>(
    'SELECT body_hash, invocation_id, expires_at FROM exec_idempotency_keys WHERE project_id = ? AND key = ?',
  );
  const claimKey = db.prepare(`
    INSERT INTO exec_idempotency_keys (project_id, key, body_hash, invocation_id, expires_at) VALUES (@projectId, @key, @bodyHash, @invocationId, @expiresAt)
    ON CONFLICT (project_id, key) DO UPDATE SET body_hash = excluded.body_hash, invocation_id = excluded.invocation_id, expires_at = excluded.expires_at
    WHERE exec_idempotency_keys.expires_at <= @now`);
  const dropExpiredKeys = db.prepare('DELETE FROM exec_idempotency_keys WHERE expires_at <= ?');

  const emit = (events: readonly ExecEvent[], projectId: string): void => {
    for (const e of events) outbox.emit(projectId, e.type, e.data);
  };

  /** The change's guarded writes and its events; throws Rollback('taken') when a guard no longer holds. */
  const apply = (change: Change): void => {
    const { invocation, approval } = change;
    if (invocation && updateInvocation.run({ ...invocationParams(invocation.to), owner, from: invocation.from }).changes !== 1) throw new Rollback('taken');
    if (approval && updateApproval.run({ ...approvalParams(approval.to), fromState: approval.from.state, fromStage: approval.from.stage }).changes !== 1) {
      throw new Rollback('taken');
    }
    emit(change.events, change.projectId);
  };

  /** `fn`'s result, or the outcome of the Rollback it threw (anything else is rethrown). */
  const settled = <T>(fn: () => T): T | Rollback['outcome'] => {
    try {
      return fn();
    } catch (err) {
      if (err instanceof Rollback) return err.outcome;
      throw err;
    }
  };

  /**
   * The new invocation (and its approval), unless the Idempotency-Key is already held: then the first
   * invocation for the same body, a conflict for another. The key's primary key decides between
   * concurrent POSTs, and the write lock (writeTransaction) orders processes sharing the file.
   */
  const createTx = writeTransaction(
    db,
    (inv: Invocation, approval: Approval | null, events: readonly ExecEvent[], idem: IdempotencyRecord | null, now: number): CreateOutcome => {
      if (idem) {
        const claimed = claimKey.run({ projectId: inv.projectId, key: idem.key, bodyHash: idem.bodyHash, invocationId: inv.id, expiresAt: idem.expiresAt, now }).changes;
        if (claimed === 0) {
          const held = keyRecord.get(inv.projectId, idem.key);
          const first = held ? invocationById.get(held.invocation_id) : undefined;
          if (!held || held.body_hash !== idem.bodyHash || !first) return { kind: 'conflict' };
          return { kind: 'replayed', invocation: toInvocation(first) };
        }
      }
      insertInvocation.run({ ...invocationParams(inv), owner });
      if (approval) insertApproval.run(approvalParams(approval));
      emit(events, inv.projectId);
      return { kind: 'created' };
    },
  );

  const commitTx = writeTransaction(db, apply);

  const claimTx = writeTransaction(db, (change: Change, send: () => boolean): 'claimed' => {
    apply(change);
    if (!send()) throw new Rollback('unsent');
    return 'claimed';
  });

  const page = <R extends { seq: number }, T>(sql: string, params: unknown[], limit: number, map: (r: R) => T): Page<T> => {
    const rows = db.prepare<unknown[], R>(sql).all(...params, limit + 1);
    return { items: rows.slice(0, limit).map(map), hasMore: rows.length > limit };
  };

  return {
    create: (inv: Invocation, approval: Approval | null, events: readonly ExecEvent[], idem: IdempotencyRecord | null, now: number): CreateOutcome =>
      createTx(inv, approval, events, idem, now),
    /** A held key, if it has not expired: to answer a replay before anything else is checked. */
    idempotencyKey(projectId: string, key: string, now: number): { bodyHash: string; invocationId: string } | null {
      const held = keyRecord.get(projectId, key);
      return held && held.expires_at > now ? { bodyHash: held.body_hash, invocationId: held.invocation_id } : null;
    },
    /**
     * Saves the records' new states and writes their events, atomically, if every record is still in the
     * state the change was computed from; false (nothing written) when another writer changed one first.
     */
    commit: (change: Change): boolean => settled(() => commitTx(change)) !== 'taken',
    /**
     * queued -> dispatched for this instance, then `send` (the message to the agent), in one transaction:
     * the loser of a race for the row never sends, and a send that fails undoes the claim. The commit
     * follows the send; if it fails the caller must tell the agent to stop.
     */
    claim: (change: Change, send: () => boolean): ClaimOutcome => settled(() => claimTx(change, send)),
    invocation(id: string): Invocation | null {
      const r = invocationById.get(id);
      return r ? toInvocation(r) : null;
    },
    approval(id: string): Approval | null {
      const r = approvalById.get(id);
      return r ? toApproval(r) : null;
    },
    /** Newest first; null when `after` names no invocation of the project. */
    listInvocations(projectId: string, q: PageQuery): Page<Invocation> | null {
      const before = q.after === null ? Number.MAX_SAFE_INTEGER : seqOfInvocation.get(projectId, q.after)?.seq;
      if (before === undefined) return null;
      const where = ['project_id = ?', 'seq < ?'];
      const params: unknown[] = [projectId, before];
      narrow(where, params, 'status', q);
      return page<InvocationRow, Invocation>(`SELECT ${INV_COLUMNS} FROM exec_invocations WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ?`, params, q.limit, toInvocation);
    },
    listApprovals(projectId: string, q: PageQuery): Page<Approval> | null {
      const before = q.after === null ? Number.MAX_SAFE_INTEGER : seqOfApproval.get(projectId, q.after)?.seq;
      if (before === undefined) return null;
      const where = ['project_id = ?', 'seq < ?'];
      const params: unknown[] = [projectId, before];
      narrow(where, params, 'state', q);
      return page<ApprovalRow, Approval>(`SELECT ${APP_COLUMNS} FROM exec_approvals WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ?`, params, q.limit, toApproval);
    },
    /** Invocations whose deadline has come (queued, dispatched or running). */
    dueInvocations: (now: number, limit: number): Invocation[] => dueInvocations.all(now, limit).map(toInvocation),
    /** Pending approvals whose current stage has lapsed. */
    dueApprovals: (now: number, limit: number): Approval[] => dueApprovals.all(now, limit).map(toApproval),
    /** In creation order, from after `afterSeq`: for restart recovery and dispatch retries. */
    withStatus(status: InvocationStatus, afterSeq: number, limit: number): { seq: number; invocation: Invocation }[] {
      return withStatus.all(status, afterSeq, limit).map((r) => ({ seq: r.seq, invocation: toInvocation(r) }));
    },
    /** Like withStatus, only rows whose owner instance is gone: what recovery may fail. */
    abandoned(status: 'dispatched' | 'running', afterSeq: number, limit: number): { seq: number; invocation: Invocation }[] {
      return abandoned.all(status, afterSeq, limit).map((r) => ({ seq: r.seq, invocation: toInvocation(r) }));
    },
    /** `fn` in one write transaction: a read and the commits that follow from it, with no instance in between. */
    atomically: <T>(fn: () => T): T => writeTransaction(db, fn)(),
    activeOfAgent: (agentId: string): Invocation[] => activeOfAgent.all(agentId).map(toInvocation),
    /** The stored status (and agent) of each of these invocations: what siblings did to them. */
    statusesOf: (ids: readonly string[]): { id: string; status: InvocationStatus; agentId: string | null }[] =>
      statusesOf.all(JSON.stringify(ids)).map((r) => ({ id: r.id, status: r.status as InvocationStatus, agentId: r.agent_id })),
    dropExpiredKeys: (now: number): number => dropExpiredKeys.run(now).changes,
  };
}
