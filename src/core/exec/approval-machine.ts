/**
 * The approval state machine (docs/exec.md "Approvals"), pure: `pending` -> `accepted` | `rejected` |
 * `expired`. A pending approval walks its workspace's escalation chain on the injected clock: each stage's
 * target has `timeout_ms` to decide; when it lapses the next stage takes over (`exec.approval_escalated`,
 * `stage` 1-based), and after the last one the approval expires (`exec.approval_timed_out`).
 *
 * Stage deadlines follow one another (the next starts when the last one ended, not when the lapse was
 * noticed), so a clock moved past several stages at once emits each escalation in order, then the
 * time-out: the same events, whatever the polling interval.
 */
import type { ToolRisk } from './agent-registry.js';
import { execEvents, type ExecEvent } from './exec-events.js';

export const APPROVAL_STATES = ['pending', 'accepted', 'rejected', 'expired'] as const;
export type ApprovalState = (typeof APPROVAL_STATES)[number];

export interface ApprovalStage {
  readonly target: string;
  readonly timeoutMs: number;
}

/** A workspace's settings (config `workspaces[].exec`). */
export interface ApprovalPolicy {
  readonly approvalRequiredTools: readonly string[];
  readonly chain: readonly ApprovalStage[];
}

export interface Approval {
  readonly id: string;
  readonly projectId: string;
  readonly invocationId: string;
  readonly workspaceId: string;
  readonly toolName: string;
  readonly risk: ToolRisk;
  readonly state: ApprovalState;
  /** Copied from the policy when requested: a config change never reshapes a chain under way. */
  readonly chain: readonly ApprovalStage[];
  /** 0-based index into `chain` of the stage now responsible. */
  readonly stage: number;
  /** When the current stage lapses; null once decided or expired. */
  readonly stageDeadlineAt: number | null;
  readonly decidedBy: string | null;
  readonly reason: string | null;
  readonly createdAt: number;
  readonly decidedAt: number | null;
  /** Who asked (docs/exec.md "Who decides"): never the one to decide. */
  readonly requester: Requester;
}

/**
 * The principal that created the invocation: the API key (null: none recorded, rows from before migration
 * 017) and the user owning it (null: a key with no user).
 */
export interface Requester {
  readonly keyId: string | null;
  readonly userId: string | null;
}

export const NO_REQUESTER: Requester = { keyId: null, userId: null };

export interface ApprovalTransition {
  readonly approval: Approval;
  readonly events: readonly ExecEvent[];
}

/** Destructive tools always wait; so does any tool the workspace lists. */
export function needsApproval(risk: ToolRisk, toolName: string, policy: ApprovalPolicy): boolean {
  return risk === 'destructive' || policy.approvalRequiredTools.includes(toolName);
}

export interface ApprovalRequest {
  readonly id: string;
  readonly projectId: string;
  readonly invocationId: string;
  readonly workspaceId: string;
  readonly toolName: string;
  readonly risk: ToolRisk;
  readonly chain: readonly ApprovalStage[];
  readonly requester: Requester;
}

export function requestApproval(input: ApprovalRequest, now: number): ApprovalTransition {
  const first = input.chain[0];
  if (!first) throw new Error('an approval chain has at least one stage (config validation)');
  const approval: Approval = {
    ...input,
    state: 'pending',
    stage: 0,
    stageDeadlineAt: now + first.timeoutMs,
    decidedBy: null,
    reason: null,
    createdAt: now,
    decidedAt: null,
  };
  const event = execEvents.approvalRequested({
    invocationId: input.invocationId,
    approvalId: input.id,
    toolName: input.toolName,
    risk: input.risk,
    workspaceId: input.workspaceId,
    at: now,
  });
  return { approval, events: [event] };
}

export function accept(a: Approval, decidedBy: string, now: number): ApprovalTransition | null {
  if (a.state !== 'pending') return null;
  return {
    approval: { ...a, state: 'accepted', decidedBy, decidedAt: now, stageDeadlineAt: null },
    events: [execEvents.approved({ invocationId: a.invocationId, approvalId: a.id, decidedBy, at: now })],
  };
}

export function reject(a: Approval, decidedBy: string, reason: string | null, now: number): ApprovalTransition | null {
  if (a.state !== 'pending') return null;
  return {
    approval: { ...a, state: 'rejected', decidedBy, reason, decidedAt: now, stageDeadlineAt: null },
    events: [execEvents.rejected({ invocationId: a.invocationId, approvalId: a.id, reason, at: now })],
  };
}

/**
 * The clock's turn: every stage that lapsed by `now` escalates, and a lapsed last stage expires the
 * approval. Null when nothing is due.
 */
export function lapse(a: Approval, now: number): ApprovalTransition | null {
  if (a.state !== 'pending' || a.stageDeadlineAt === null || now < a.stageDeadlineAt) return null;
  const events: ExecEvent[] = [];
  let stage = a.stage;
  let deadline = a.stageDeadlineAt;
  for (;;) {
    const next = a.chain[stage + 1];
    if (!next) {
      events.push(execEvents.approvalTimedOut({ invocationId: a.invocationId, approvalId: a.id, at: deadline }));
      return { approval: { ...a, state: 'expired', stage, stageDeadlineAt: null, decidedAt: deadline }, events };
    }
    stage += 1;
    events.push(execEvents.approvalEscalated({ invocationId: a.invocationId, approvalId: a.id, stage: stage + 1, target: next.target, at: deadline }));
    deadline += next.timeoutMs;
    if (now < deadline) return { approval: { ...a, stage, stageDeadlineAt: deadline }, events };
  }
}

/** The invocation was cancelled while its approval was pending: nobody needs to decide any more. */
export function withdraw(a: Approval, now: number): Approval | null {
  if (a.state !== 'pending') return null;
  return { ...a, state: 'expired', stageDeadlineAt: null, decidedAt: now };
}
