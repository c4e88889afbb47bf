/**
 * The agents' tools on MCP (docs/mcp.md "Agent tools"): `tools/list` shows the MCP-visible tools of the
 * online agents serving the request's workspace; `tools/call` creates an invocation with the invocations
 * service exactly as `POST /v1/exec/invocations` does (schema check, approvals, limits, events, ledger),
 * then answers with its output once it ends, or at once when it waits for an approval.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { AgentRegistry } from '../core/exec/agent-registry.js';
import type { Invocation } from '../core/exec/invocation-machine.js';
import { catalogOf, type ToolListing } from '../core/exec/tool-catalog.js';
import { requesterOf } from '../app/approval-decisions.js';
import { GatewayError } from '../errors.js';
import type { InvocationService } from '../exec/invocations/invocation-service.js';
import { invocationWire } from '../app/exec-views.js';
import { settled } from '../exec/invocations/invocation-settled.js';
import type { McpCallContext } from './mcp-call-context.js';
import { jsonResult, refusalResult, unknownToolError } from './tool-results.js';

export interface AgentToolsDeps {
  readonly exec: InvocationService;
  readonly agents: AgentRegistry;
  /** config `exec.default_timeout_ms`: an MCP call names no timeout. */
  readonly timeoutMs: number;
}

/** The `exec.` prefix is the server's own tools': an agent tool named so is not shown (it would be shadowed). */
export const OWN_PREFIX = 'exec.';

function listingsOf(deps: AgentToolsDeps, ctx: McpCallContext): ToolListing[] {
  return catalogOf(deps.agents.online(ctx.projectId, ctx.workspaceId), [ctx.workspaceId]).filter((t) => !t.tool.name.startsWith(OWN_PREFIX));
}

export function listAgentTools(deps: AgentToolsDeps, ctx: McpCallContext): Tool[] {
  return listingsOf(deps, ctx)
    .filter((t) => t.tool.mcp_visible)
    .map(({ tool }) => ({
      name: tool.name,
      // A manifest's description defaults to ""; MCP clients (and the conformance suite) expect one.
      description: tool.description || `Runs ${tool.name} on an execution agent (risk: ${tool.risk}).`,
      inputSchema: tool.input_schema as Tool['inputSchema'],
      // MCP's hints default to destructive: say what the manifest's risk says.
      annotations: { readOnlyHint: tool.risk === 'read', destructiveHint: tool.risk === 'destructive', openWorldHint: true },
    }));
}

export async function callAgentTool(deps: AgentToolsDeps, ctx: McpCallContext, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  const listing = listingsOf(deps, ctx).find((t) => t.tool.name === name);
  if (!listing) {
    throw unknownToolError(new GatewayError('exec_tool_not_found', { param: 'name', message: `No online agent serving workspace ${ctx.workspaceId} offers a tool named ${JSON.stringify(name.slice(0, 64))}.` }));
  }
  if (!listing.tool.mcp_visible) {
    throw unknownToolError(new GatewayError('tool_not_mcp_visible', { param: 'name', message: `Tool ${name} is not exposed on MCP (its manifest says mcp_visible: false); invoke it through POST /v1/exec/invocations.` }));
  }
  let created: Invocation;
  try {
    created = (await deps.exec.create({ projectId: ctx.projectId, workspaceId: ctx.workspaceId, toolName: name, arguments: args, timeoutMs: deps.timeoutMs, idempotency: null, requester: requesterOf(ctx.auth) })).invocation;
  } catch (err) {
    // The agent left since the lookup: as unknown as every other tool no agent offers.
    if (err instanceof GatewayError && err.code === 'exec_tool_not_found') throw unknownToolError(err);
    return refusalResult(err);
  }
  if (created.status === 'pending_approval') return pendingResult(created);
  return outcomeResult(await settled(deps.exec, created, ctx.signal));
}

/** A destructive call does not hold the request for a human: the caller follows up with exec.invocation_status. */
function pendingResult(inv: Invocation): CallToolResult {
  const text =
    `Invocation ${inv.id} of ${inv.toolName} waits for approval ${inv.approvalId}. ` +
    `An approver other than this API key's user accepts it with exec.approval_accept (or POST /v1/exec/approvals/${inv.approvalId}/accept); ` +
    `then exec.invocation_status with invocation_id ${inv.id} gives its result.`;
  return jsonResult(invocationWire(inv), false, text);
}

/** The output as the text; a failure (non-zero exit, timeout, cancel) is an error result with its reason. */
function outcomeResult(inv: Invocation): CallToolResult {
  const failed = inv.status !== 'completed';
  const reason = inv.error ? `${inv.output ? '\n' : ''}[${inv.error.code}] ${inv.error.message}` : '';
  return jsonResult(invocationWire(inv), failed, `${inv.output}${failed ? reason : ''}`);
}
