/**
 * Human approvals of exec invocations (docs/exec.md "Approvals"): list, accept, reject. The exec approvals
 * routes (routes/exec-approvals.ts, deciding as an API key) and the dashboard's approvals page (deciding as
 * a signed-in user) run these; each says which workspaces its principal may use, and an approval outside
 * them reads as absent (404 approval_not_found), never as forbidden.
 */
import type { Approval } from '../core/exec/approval-machine.js';
import { GatewayError } from '../errors.js';
import type { InvocationService } from '../exec/invocations/invocation-service.js';
import type { PageQuery } from '../core/store/exec-invocations-store.js';

/** Who decides: an id recorded as `decided_by`, the workspaces they may use, and how to name them in a 404. */
export interface Decider {
  readonly id: string;
  mayUse(workspaceId: string): boolean;
  /** "this API key", "your account". */
  readonly label: string;
}

export function createApprovalDecisions(exec: InvocationService) {
  const visible = async (projectId: string, approvalId: string, who: Decider): Promise<void> => {
    const approval = await exec.approval(projectId, approvalId);
    if (!who.mayUse(approval.workspaceId)) {
      throw new GatewayError('approval_not_found', { param: 'approval_id', message: `No approval ${approvalId} in the workspaces ${who.label} may use.` });
    }
  };
  return {
    /** Newest first; `workspaceIds` null: every workspace. 400 invalid_query when `after` names none. */
    async list(projectId: string, q: PageQuery): Promise<{ items: Approval[]; hasMore: boolean }> {
      const page = await exec.listApprovals(projectId, q);
      if (!page) throw new GatewayError('invalid_query', { param: 'after', message: `after names no approval of this project: ${JSON.stringify(q.after)}.` });
      return page;
    },
    async accept(projectId: string, approvalId: string, who: Decider): Promise<Approval> {
      await visible(projectId, approvalId, who);
      return exec.accept(projectId, approvalId, who.id);
    },
    async reject(projectId: string, approvalId: string, who: Decider, reason: string | null): Promise<Approval> {
      await visible(projectId, approvalId, who);
      return exec.reject(projectId, approvalId, who.id, reason);
    },
  };
}

export type ApprovalDecisions = ReturnType<typeof createApprovalDecisions>;
