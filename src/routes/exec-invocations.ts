/**
 * `/{project}/v1/exec/invocations...` (docs/exec.md "Invocations"): create, list, read, cancel, and the
 * events stream (exec-invocation-events.ts). Scope `execution` (SPEC Authentication 2): an inference-only
 * key gets 403 scope_insufficient. Times on the wire are ISO 8601 strings, as SPEC's exec payloads.
 */
import { createHash } from 'node:crypto';
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import { requesterOf } from '../app/approval-decisions.js';
import { invocationWire, visibleInvocation } from '../app/exec-views.js';
import { GatewayError } from '../errors.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import type { InvocationService } from '../exec/invocations/invocation-service.js';
import { canonicalJson, parseCancelInvocation, parseCreateInvocation, parseIdempotencyKey, parseStatusFilter } from '../schemas/exec-invocations.js';
import { parsePageQuery } from '../schemas/webhooks.js';
import { followInvocation } from './exec-invocation-events.js';
import { requireExecWorkspace } from './exec-workspace.js';
import { keyed } from './guard.js';
import type { Services } from '../app/services.js';

export interface ExecServices extends Services {
  readonly exec: InvocationService;
  /** config `exec.default_timeout_ms`: an invocation's timeout when the request names none. */
  readonly execDefaultTimeoutMs: number;
}

export function execInvocationsRoutes(services: ExecServices): RouteDef[] {
  const { exec } = services;
  const id = (ctx: RouteContext): string => ctx.req.params.invocation ?? '';
  const route = (method: RouteDef['method'], pattern: string, handle: (ctx: RouteContext, a: AuthenticatedKey) => Promise<void> | void): RouteDef =>
    keyed(services, 'execution', { method, pattern: `/:project/v1/exec/invocations${pattern}`, family: 'exec', handle });

  return [
    route('POST', '', async (ctx, a) => {
      const idempotencyKey = parseIdempotencyKey(ctx.req.header('idempotency-key'));
      const { body, raw } = parseCreateInvocation(await ctx.req.body());
      const workspaceId = requireExecWorkspace(body.workspace_id, a, services);
      const { invocation, created } = await exec.create({
        projectId: a.project.id,
        workspaceId,
        toolName: body.tool_name,
        arguments: body.arguments ?? {},
        timeoutMs: body.timeout_ms ?? services.execDefaultTimeoutMs,
        idempotency: idempotencyKey === null ? null : { key: idempotencyKey, bodyHash: createHash('sha256').update(canonicalJson(raw)).digest('hex') },
        requester: requesterOf(a),
      });
      ctx.reply.json(created ? 201 : 200, invocationWire(invocation));
    }),
    route('GET', '', async (ctx, a) => {
      const query = ctx.req.searchParams();
      const { limit, after } = parsePageQuery(query);
      const status = parseStatusFilter(query.get('status'));
      const named = query.get('workspace_id');
      const workspaceIds = named !== null ? [requireExecWorkspace(named, a, services)] : a.key.allowedWorkspaceIds;
      const page = await exec.list(a.project.id, { limit, after, status, workspaceIds });
      if (!page) throw new GatewayError('invalid_query', { param: 'after', message: `after names no invocation of this project: ${JSON.stringify(after)}.` });
      ctx.reply.json(200, { object: 'list', data: page.items.map(invocationWire), has_more: page.hasMore });
    }),
    route('GET', '/:invocation', async (ctx, a) => {
      ctx.reply.json(200, invocationWire(await visibleInvocation(services, a, id(ctx))));
    }),
    route('POST', '/:invocation/cancel', async (ctx, a) => {
      parseCancelInvocation(await ctx.req.body());
      await visibleInvocation(services, a, id(ctx));
      ctx.reply.json(200, invocationWire(await exec.cancel(a.project.id, id(ctx))));
    }),
    route('GET', '/:invocation/events', async (ctx, a) => {
      await visibleInvocation(services, a, id(ctx));
      return followInvocation(ctx, exec, a.project.id, id(ctx));
    }),
  ];
}
