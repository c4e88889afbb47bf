/**
 * Invocations and approvals to and from their rows (exec-invocations-tables.ts), for both backends.
 */
import type { Selectable } from 'kysely';
import type { Approval, ApprovalStage } from '../../core/exec/approval-machine.js';
import { deadlineOf, type Invocation } from '../../core/exec/invocation-machine.js';
import { fromJson, toJson } from '../json-column.js';
import { truthy } from '../sql/sql-program.js';
import type { ExecInvocationsTables } from './exec-invocations-tables.js';

export type InvocationRow = Selectable<ExecInvocationsTables['exec_invocations']>;
export type ApprovalRow = Selectable<ExecInvocationsTables['exec_approvals']>;

export const toInvocation = (r: InvocationRow): Invocation => ({
  id: r.id,
  projectId: r.project_id,
  workspaceId: r.workspace_id,
  toolName: r.tool_name,
  arguments: fromJson<Record<string, unknown>>(r.arguments),
  status: r.status,
  risk: r.risk,
  agentId: r.agent_id,
  approvalId: r.approval_id,
  timeoutMs: r.timeout_ms,
  exitCode: r.exit_code,
  durationMs: r.duration_ms,
  output: r.output,
  // SQLite reads its 0 or 1.
  outputTruncated: truthy(r.output_truncated),
  error: r.error_code === null ? null : { code: r.error_code, message: r.error_message ?? '' },
  createdAt: r.created_at,
  readyAt: r.ready_at,
  dispatchedAt: r.dispatched_at,
  completedAt: r.completed_at,
});

export const toApproval = (r: ApprovalRow): Approval => ({
  id: r.id,
  projectId: r.project_id,
  invocationId: r.invocation_id,
  workspaceId: r.workspace_id,
  toolName: r.tool_name,
  risk: r.risk,
  state: r.state,
  chain: fromJson<ApprovalStage[]>(r.chain),
  stage: r.stage,
  stageDeadlineAt: r.stage_deadline_at,
  decidedBy: r.decided_by,
  reason: r.reason,
  createdAt: r.created_at,
  decidedAt: r.decided_at,
  requester: { keyId: r.requested_by_key, userId: r.requested_by_user },
});

/** What a state change may move on an invocation (the rest is fixed at creation). */
export const invocationState = (inv: Invocation) => ({
  status: inv.status,
  agent_id: inv.agentId,
  exit_code: inv.exitCode,
  duration_ms: inv.durationMs,
  output: inv.output,
  output_truncated: inv.outputTruncated,
  error_code: inv.error?.code ?? null,
  error_message: inv.error?.message ?? null,
  ready_at: inv.readyAt,
  deadline_at: deadlineOf(inv),
  dispatched_at: inv.dispatchedAt,
  completed_at: inv.completedAt,
});

export const invocationRow = (inv: Invocation, owner: string | null) => ({
  ...invocationState(inv),
  id: inv.id,
  project_id: inv.projectId,
  workspace_id: inv.workspaceId,
  tool_name: inv.toolName,
  arguments: toJson(inv.arguments),
  risk: inv.risk,
  approval_id: inv.approvalId,
  timeout_ms: inv.timeoutMs,
  created_at: inv.createdAt,
  owner_instance: owner,
});

/** What a decision or a lapsed stage may move on an approval. */
export const approvalState = (a: Approval) => ({
  state: a.state,
  stage: a.stage,
  stage_deadline_at: a.stageDeadlineAt,
  decided_by: a.decidedBy,
  reason: a.reason,
  decided_at: a.decidedAt,
});

export const approvalRow = (a: Approval) => ({
  ...approvalState(a),
  id: a.id,
  project_id: a.projectId,
  invocation_id: a.invocationId,
  workspace_id: a.workspaceId,
  tool_name: a.toolName,
  risk: a.risk,
  chain: toJson(a.chain),
  created_at: a.createdAt,
  requested_by_key: a.requester.keyId,
  requested_by_user: a.requester.userId,
});
