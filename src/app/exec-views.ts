/**
 * What the execution surfaces share of invocations and approvals (issue 33): the HTTP routes
 * (routes/exec-invocations.ts, routes/exec-approvals.ts) and the MCP tools (mcp/exec-tools.ts,
 * mcp/agent-tools.ts) show them in one wire shape, confine a key to its workspaces the same way and
 * decide approvals as the same principal. Times on the wire are ISO 8601 strings, as SPEC's exec payloads.
 */
import type { Decider } from './approval-decisions.js';
import { mayUseWorkspace, type AuthenticatedKey } from '../core/auth/authenticate.js';
import type { Approval } from '../core/exec/approval-machine.js';
import { iso } from '../core/exec/exec-events.js';
import type { Invocation } from '../core/exec/invocation-machine.js';
import { GatewayError } from '../errors.js';
import type { InvocationService } from '../exec/invocations/invocation-service.js';

const isoOrNull = (ms: number | null): string | null => (ms === null ? null : iso(ms));

export function invocationWire(inv: Invocation) {
  return {
    id: inv.id,
    object: 'exec.invocation' as const,
    project_id: inv.projectId,
    workspace_id: inv.workspaceId,
    tool_name: inv.toolName,
    arguments: inv.arguments,
    status: inv.status,
    risk: inv.risk,
    agent_id: inv.agentId,
    approval_id: inv.approvalId,
    timeout_ms: inv.timeoutMs,
    exit_code: inv.exitCode,
    duration_ms: inv.durationMs,
    output: inv.output,
    output_truncated: inv.outputTruncated,
    error: inv.error,
    created_at: iso(inv.createdAt),
    dispatched_at: isoOrNull(inv.dispatchedAt),
    completed_at: isoOrNull(inv.completedAt),
  };
}

export function approvalWire(a: Approval) {
  const stage = a.chain[a.stage];
  return {
    id: a.id,
    object: 'exec.approval' as const,
    project_id: a.projectId,
    invocation_id: a.invocationId,
    workspace_id: a.workspaceId,
    tool_name: a.toolName,
    risk: a.risk,
    state: a.state,
    /** 1-based, as `exec.approval_escalated` counts stages. */
    stage: a.stage + 1,
    target: stage?.target ?? null,
    chain: a.chain.map((s) => ({ target: s.target, timeout_ms: s.timeoutMs })),
    escalates_at: isoOrNull(a.stageDeadlineAt),
    decided_by: a.decidedBy,
    reason: a.reason,
    created_at: iso(a.createdAt),
    decided_at: isoOrNull(a.decidedAt),
  };
}

/** The invocation, if this key may see it: another project's, or another workspace's for a confined key, is 404. */
export async function visibleInvocation(services: { readonly exec: InvocationService }, auth: AuthenticatedKey, id: string): Promise<Invocation> {
  const inv = await services.exec.get(auth.project.id, id);
  if (!mayUseWorkspace(auth, inv.workspaceId)) {
    throw new GatewayError('invocation_not_found', { param: 'invocation_id', message: `No invocation ${id} in the workspaces this API key may use.` });
  }
  return inv;
}

/**
 * An API key deciding an approval. SPEC's `exec.approved` carries `decided_by` as a user id: a key minted in
 * the dashboard belongs to its user, who is the one deciding; a key with no user (minted through the
 * management API or the config) can only be named by its own id. Who may decide at all is
 * app/approval-decisions.ts's rule (403 approval_not_permitted). Another project's approval, or another
 * workspace's for a confined key, is 404 approval_not_found.
 */
export const keyDecider = (a: AuthenticatedKey): Decider => ({
  id: a.key.userId ?? a.key.id,
  keyId: a.key.id,
  userId: a.key.userId,
  scopes: a.key.scopes,
  issuedBy: a.key.issuedBy,
  mayUse: (w) => mayUseWorkspace(a, w),
  label: 'this API key',
});
