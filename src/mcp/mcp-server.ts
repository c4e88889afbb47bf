/**
 * One MCP session's server (the SDK's low-level `Server`: our tools are the agents' JSON Schemas, not zod
 * shapes, and change as agents come and go). It declares the `tools` capability only; `tools/list` and
 * `tools/call` read who calls from the request (McpCallContext), so a session sees the workspace and the
 * key of each request, not only of its `initialize`.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { VERSION } from '../version.js';
import { callAgentTool, listAgentTools, type AgentToolsDeps } from './agent-tools.js';
import { callExecTool, execToolsFor, isExecTool, type ExecToolsDeps } from './exec-tools.js';
import { McpCallContext } from './mcp-call-context.js';
import { refusalResult } from './tool-results.js';

export type McpToolsDeps = AgentToolsDeps & ExecToolsDeps;

const INSTRUCTIONS =
  "Tools of this workspace's execution agents, and exec.* tools to follow invocations and decide approvals. " +
  'A tool that needs an approval answers at once with the approval id; exec.invocation_status gives its result once decided.';

export function createMcpServer(deps: McpToolsDeps): Server {
  const server = new Server({ name: 'switchboard', version: VERSION }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => {
    const ctx = McpCallContext.of(extra.authInfo);
    return { tools: [...listAgentTools(deps, ctx), ...(await execToolsFor(deps, ctx))] };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const http = McpCallContext.of(extra.authInfo);
    // The HTTP request's abort, or the client's notifications/cancelled for this call.
    const ctx = new McpCallContext(http.auth, http.workspaceId, AbortSignal.any([http.signal, extra.signal]));
    const { name } = request.params;
    const args = request.params.arguments ?? {};
    if (isExecTool(name)) return callExecTool(deps, ctx, name, args);
    try {
      return await callAgentTool(deps, ctx, name, args);
    } catch (err) {
      if (err instanceof McpError) throw err;
      return refusalResult(err);
    }
  });
  return server;
}
