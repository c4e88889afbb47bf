/**
 * `/{project}/v1/exec/approvals...` (docs/exec.md "Approvals"): list, accept, reject. Scope `execution`;
 * deciding also needs a privileged principal (docs/exec.md "Who decides"); `decided_by` is the key owner's `usr_` id, or the key's id for a key with no user. Approval bodies are
 * small: the management 16 KiB cap.
 */
import type { ApprovalDecisions } from '../app/approval-decisions.js';
import { approvalWire, keyDecider } from '../app/exec-views.js';
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { parseAcceptApproval, parseRejectApproval, parseStateFilter } from '../schemas/exec-invocations.js';
import { parsePageQuery } from '../schemas/webhooks.js';
import type { ExecServices } from './exec-invocations.js';
import { requireExecWorkspace } from './exec-workspace.js';
import { keyed, MANAGEMENT_BODY_LIMIT } from './guard.js';

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
