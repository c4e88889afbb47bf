/**
 * `/{project}/v1/exec/approvals...` (docs/exec.md "Approvals"): list, accept, reject. Scope `execution`;
 * deciding also needs a privileged principal (docs/exec.md "Who decides"); `decided_by` is the key owner's `usr_` id, or the key's id for a key with no user. Approval bodies are
 * small: the management 16 KiB cap.
 */
import type { ApprovalDecisions, Decider } from '../app/approval-decisions.js';
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import type { Approval } from '../core/exec/approval-machine.js';
import { iso } from '../core/exec/exec-events.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { parseAcceptApproval, parseRejectApproval, parseStateFilter } from '../schemas/exec-invocations.js';
import { parsePageQuery } from '../schemas/webhooks.js';
import type { ExecServices } from './exec-invocations.js';
import { mayUseWorkspace, requireExecWorkspace } from './exec-workspace.js';
import { keyed, MANAGEMENT_BODY_LIMIT } from './guard.js';

const isoOrNull = (ms: number | null): string | null => (ms === null ? null : iso(ms));

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
  mayUse: (w) => mayUseWorkspace(a, w),
  label: 'this API key',
});

export function execApprovalsRoutes(services: ExecServices & { readonly approvals: ApprovalDecisions }): RouteDef[] {
  const decisions = services.approvals;
  const id = (ctx: RouteContext): string => ctx.req.params.approval ?? '';
  const route = (method: RouteDef['method'], pattern: string, handle: (ctx: RouteContext, a: AuthenticatedKey) => Promise<void> | void): RouteDef =>
    keyed(services, 'execution', { method, pattern: `/:project/v1/exec/approvals${pattern}`, family: 'exec', bodyLimit: MANAGEMENT_BODY_LIMIT, handle });

  return [
    route('GET', '', async (ctx, a) => {
      const query = ctx.req.searchParams();
      const { limit, after } = parsePageQuery(query);
      const state = parseStateFilter(query.get('state'));
      const named = query.get('workspace_id');
      const workspaceIds = named !== null ? [requireExecWorkspace(named, a, services)] : a.key.allowedWorkspaceIds;
      const page = await decisions.list(a.project.id, { limit, after, status: state, workspaceIds });
      ctx.reply.json(200, { object: 'list', data: page.items.map(approvalWire), has_more: page.hasMore });
    }),
    route('POST', '/:approval/accept', async (ctx, a) => {
      parseAcceptApproval(await ctx.req.body());
      ctx.reply.json(200, approvalWire(await decisions.accept(a.project.id, id(ctx), keyDecider(a))));
    }),
    route('POST', '/:approval/reject', async (ctx, a) => {
      const { reason } = parseRejectApproval(await ctx.req.body());
      ctx.reply.json(200, approvalWire(await decisions.reject(a.project.id, id(ctx), keyDecider(a), reason)));
    }),
  ];
}
