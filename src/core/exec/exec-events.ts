/**
 * The `exec.*` events the invocations' side emits, with SPEC "Payloads of emitted exec events" fields
 * exactly (snake_case, ISO 8601 timestamps). The state machines return them beside the state they
 * describe, so the store writes both in one transaction (docs/exec.md "Events").
 */
import type { ToolRisk } from './agent-registry.js';

export interface ExecEvent {
  readonly type: ExecEventType;
  readonly data: Record<string, unknown>;
}

export type ExecEventType =
  | 'exec.dispatched'
  | 'exec.completed'
  | 'exec.failed'
  | 'exec.timeout'
  | 'exec.approval_requested'
  | 'exec.approved'
  | 'exec.rejected'
  | 'exec.approval_escalated'
  | 'exec.approval_timed_out'
  | 'exec.agent_offline';

/** SPEC: exec timestamps are ISO 8601 strings (the envelope's own `created_at` stays Unix seconds). */
export const iso = (ms: number): string => new Date(ms).toISOString();

export const execEvents = {
  dispatched: (p: { invocationId: string; toolName: string; workspaceId: string; agentId: string; risk: ToolRisk; at: number }): ExecEvent => ({
    type: 'exec.dispatched',
    data: { invocation_id: p.invocationId, tool_name: p.toolName, workspace_id: p.workspaceId, agent_id: p.agentId, risk: p.risk, dispatched_at: iso(p.at) },
  }),
  /** SPEC's example terminal status is `success` (the invocation object says `completed`). */
  completed: (p: { invocationId: string; durationMs: number; exitCode: number; at: number }): ExecEvent => ({
    type: 'exec.completed',
    data: { invocation_id: p.invocationId, status: 'success', duration_ms: p.durationMs, exit_code: p.exitCode, completed_at: iso(p.at) },
  }),
  failed: (p: { invocationId: string; errorCode: string; errorMessage: string; at: number }): ExecEvent => ({
    type: 'exec.failed',
    data: { invocation_id: p.invocationId, error_code: p.errorCode, error_message: p.errorMessage, failed_at: iso(p.at) },
  }),
  timeout: (p: { invocationId: string; timeoutMs: number; elapsedMs: number; at: number }): ExecEvent => ({
    type: 'exec.timeout',
    data: { invocation_id: p.invocationId, timeout_ms: p.timeoutMs, elapsed_ms: p.elapsedMs, timed_out_at: iso(p.at) },
  }),
  approvalRequested: (p: { invocationId: string; approvalId: string; toolName: string; risk: ToolRisk; workspaceId: string; at: number }): ExecEvent => ({
    type: 'exec.approval_requested',
    data: { invocation_id: p.invocationId, approval_id: p.approvalId, tool_name: p.toolName, risk: p.risk, workspace_id: p.workspaceId, requested_at: iso(p.at) },
  }),
  approved: (p: { invocationId: string; approvalId: string; decidedBy: string; at: number }): ExecEvent => ({
    type: 'exec.approved',
    data: { invocation_id: p.invocationId, approval_id: p.approvalId, decided_by: p.decidedBy, approved_at: iso(p.at) },
  }),
  rejected: (p: { invocationId: string; approvalId: string; reason: string | null; at: number }): ExecEvent => ({
    type: 'exec.rejected',
    data: { invocation_id: p.invocationId, approval_id: p.approvalId, reason: p.reason, rejected_at: iso(p.at) },
  }),
  approvalEscalated: (p: { invocationId: string; approvalId: string; stage: number; target: string; at: number }): ExecEvent => ({
    type: 'exec.approval_escalated',
    data: { invocation_id: p.invocationId, approval_id: p.approvalId, stage: p.stage, target: p.target, escalated_at: iso(p.at) },
  }),
  approvalTimedOut: (p: { invocationId: string; approvalId: string; at: number }): ExecEvent => ({
    type: 'exec.approval_timed_out',
    data: { invocation_id: p.invocationId, approval_id: p.approvalId, timed_out_at: iso(p.at) },
  }),
  /** `invocationId` null: the agent ran nothing when it went offline (one event for the agent alone). */
  agentOffline: (p: { invocationId: string | null; agentId: string; reason: string; at: number }): ExecEvent => ({
    type: 'exec.agent_offline',
    data: { invocation_id: p.invocationId, agent_id: p.agentId, reason: p.reason, detected_at: iso(p.at) },
  }),
};
