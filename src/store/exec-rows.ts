/**
 * The invocations' and approvals' rows as both stores read them (SQLite: exec/invocations/invocation-store.ts;
 * PostgreSQL: postgres/exec-invocations-store.ts): the same column names in both schemas, one mapping. The
 * agents' rows are exec-agents/exec-agents-rows.ts.
 */
import type { ToolRisk } from '../core/exec/agent-registry.js';
import type { Approval, ApprovalStage, ApprovalState } from '../core/exec/approval-machine.js';
import type { Invocation, InvocationStatus } from '../core/exec/invocation-machine.js';
import { fromJson } from './json-column.js';

export interface InvocationRow {
  seq: number;
  id: string;
  project_id: string;
  workspace_id: string;
  tool_name: string;
  arguments: string;
  status: string;
  risk: string;
  agent_id: string | null;
  approval_id: string | null;
  timeout_ms: number;
  exit_code: number | null;
  duration_ms: number | null;
  output: string;
  /** SQLite: 0 or 1; PostgreSQL: a boolean. */
  output_truncated: number | boolean;
  error_code: string | null;
  error_message: string | null;
  created_at: number;
  ready_at: number | null;
  dispatched_at: number | null;
  completed_at: number | null;
}

export interface ApprovalRow {
  seq: number;
  id: string;
  project_id: string;
  invocation_id: string;
  workspace_id: string;
  tool_name: string;
  risk: string;
  state: string;
  chain: string;
  stage: number;
  stage_deadline_at: number | null;
  decided_by: string | null;
  reason: string | null;
  created_at: number;
  decided_at: number | null;
  requested_by_key: string | null;
  requested_by_user: string | null;
}

export const toInvocation = (r: InvocationRow): Invocation => ({
  id: r.id,
  projectId: r.project_id,
  workspaceId: r.workspace_id,
  toolName: r.tool_name,
  arguments: fromJson<Record<string, unknown>>(r.arguments),
  status: r.status as InvocationStatus,
  risk: r.risk as ToolRisk,
  agentId: r.agent_id,
  approvalId: r.approval_id,
  timeoutMs: r.timeout_ms,
  exitCode: r.exit_code,
  durationMs: r.duration_ms,
  output: r.output,
  outputTruncated: r.output_truncated === 1 || r.output_truncated === true,
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
  risk: r.risk as ToolRisk,
  state: r.state as ApprovalState,
  chain: fromJson<ApprovalStage[]>(r.chain),
  stage: r.stage,
  stageDeadlineAt: r.stage_deadline_at,
  decidedBy: r.decided_by,
  reason: r.reason,
  createdAt: r.created_at,
  decidedAt: r.decided_at,
  requester: { keyId: r.requested_by_key, userId: r.requested_by_user },
});
