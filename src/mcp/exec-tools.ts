/**
 * The server's own `exec.*` tools (SPEC Authentication 2: the `execution` scope grants "MCP `exec.*`
 * tools"; docs/mcp.md "exec.* tools"): an invocation's status, its cancel, and the approvals of the
 * request's workspace with their decisions. Each runs the use case its REST route runs (the invocations
 * service, app/approval-decisions.ts) under the same rules, and answers in the route's wire shape.
 * Deciding is the approvals route's rule (app/approval-decisions.ts): a privileged key, never on what it
 * asked for; the decide tools are listed only to a key that may decide (docs/mcp.md "exec.* tools").
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { ApprovalDecisions } from '../app/approval-decisions.js';
import { APPROVAL_STATES } from '../core/exec/approval-machine.js';
import { approvalWire, invocationWire, keyDecider, visibleInvocation } from '../app/exec-views.js';
import type { ExecServices } from '../routes/exec-invocations.js';
import { MAX_REASON_LENGTH } from '../schemas/exec-invocations.js';
import { parseStrictBody } from '../schemas/issues.js';
import type { McpCallContext } from './mcp-call-context.js';
import { jsonResult, refusalResult } from './tool-results.js';

export interface ExecToolsDeps {
  readonly services: ExecServices;
  readonly decisions: ApprovalDecisions;
}

const invocationId = z.strictObject({ invocation_id: z.string().min(1).max(64).describe('An invocation id, inv_<hex>.') });
const approvalId = z.strictObject({ approval_id: z.string().min(1).max(64).describe('An approval id, app_<hex>.') });
const approvalsQuery = z.strictObject({
  state: z.enum(APPROVAL_STATES).optional().describe('Only approvals in this state (default: all).'),
  limit: z.number().int().min(1).max(100).optional().describe('Page size, 1 to 100 (default 20).'),
  after: z.string().min(1).max(64).optional().describe('The id of the last approval of the previous page.'),
});
const rejection = approvalId.extend({ reason: z.string().max(MAX_REASON_LENGTH).optional().describe('Why, for the requester (at most 1000 characters).') });

interface ExecToolDef<S extends z.ZodObject> {
  readonly name: string;
  readonly description: string;
  readonly schema: S;
  readonly readOnly: boolean;
  /** Offered only to a key that may decide approvals. */
  readonly decides?: boolean;
  run(deps: ExecToolsDeps, ctx: McpCallContext, args: z.infer<S>): Promise<Record<string, unknown>>;
}

const def = <S extends z.ZodObject>(d: ExecToolDef<S>): ExecToolDef<S> => d;

const DEFS = [
  def({
    name: 'exec.invocation_status',
    description: 'The invocation: status, exit code, output, error. Use it to follow a call that waited for an approval.',
    schema: invocationId,
    readOnly: true,
    run: async ({ services }, ctx, a) => invocationWire(await visibleInvocation(services, ctx.auth, a.invocation_id)),
  }),
  def({
    name: 'exec.invocation_cancel',
    description: 'Cancels a queued, pending or running invocation (withdrawing its approval if one is pending).',
    schema: invocationId,
    readOnly: false,
    run: async ({ services }, ctx, a) => {
      await visibleInvocation(services, ctx.auth, a.invocation_id);
      return invocationWire(await services.exec.cancel(ctx.projectId, a.invocation_id));
    },
  }),
  def({
    name: 'exec.approvals_list',
    description: "Approvals of this session's workspace, newest first.",
    schema: approvalsQuery,
    readOnly: true,
    run: async ({ decisions }, ctx, a) => {
      const page = await decisions.list(ctx.projectId, { limit: a.limit ?? 20, after: a.after ?? null, status: a.state ?? null, workspaceIds: [ctx.workspaceId] });
      return { object: 'list', data: page.items.map(approvalWire), has_more: page.hasMore };
    },
  }),
  def({
    name: 'exec.approval_accept',
    description: 'Accepts a pending approval: its invocation runs at once if an agent is there.',
    schema: approvalId,
    readOnly: false,
    decides: true,
    run: async ({ decisions }, ctx, a) => approvalWire(await decisions.accept(ctx.projectId, a.approval_id, keyDecider(ctx.auth))),
  }),
  def({
    name: 'exec.approval_reject',
    description: 'Rejects a pending approval: its invocation fails (approval_rejected) with the reason.',
    schema: rejection,
    readOnly: false,
    decides: true,
    run: async ({ decisions }, ctx, a) => approvalWire(await decisions.reject(ctx.projectId, a.approval_id, keyDecider(ctx.auth), a.reason ?? null)),
  }),
] as const;

export type ExecToolName = (typeof DEFS)[number]['name'];

const byName: ReadonlyMap<string, ExecToolDef<z.ZodObject>> = new Map(DEFS.map((d) => [d.name, d as unknown as ExecToolDef<z.ZodObject>]));

const listed = (d: ExecToolDef<z.ZodObject>): Tool => ({
  name: d.name,
  description: d.description,
  inputSchema: z.toJSONSchema(d.schema) as Tool['inputSchema'],
  annotations: { readOnlyHint: d.readOnly, destructiveHint: false, idempotentHint: d.readOnly, openWorldHint: false },
});

const ALL_TOOLS: readonly Tool[] = [...byName.values()].map(listed);
const FOLLOW_TOOLS: readonly Tool[] = [...byName.values()].filter((d) => d.decides !== true).map(listed);

/** The exec.* tools this key is offered: the decide tools only when it may decide some approval. */
export async function execToolsFor(deps: ExecToolsDeps, ctx: McpCallContext): Promise<readonly Tool[]> {
  return (await deps.decisions.mayDecide(ctx.projectId, keyDecider(ctx.auth))) ? ALL_TOOLS : FOLLOW_TOOLS;
}

export function isExecTool(name: string): boolean {
  return byName.has(name);
}

/** Arguments that fail the schema, and every refusal of the use case, are error results with the envelope. */
export async function callExecTool(deps: ExecToolsDeps, ctx: McpCallContext, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  const d = byName.get(name);
  if (!d) throw new Error(`not an exec tool: ${name}`);
  try {
    const parsed = parseStrictBody(d.schema, args, Object.keys(d.schema.shape), { code: 'invalid_body' });
    return jsonResult(await d.run(deps, ctx, parsed));
  } catch (err) {
    return refusalResult(err);
  }
}
