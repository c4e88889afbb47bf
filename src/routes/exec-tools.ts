/**
 * `/{project}/v1/exec/tools` and `/{project}/v1/exec/tools/{name}` (docs/exec.md): the tools of the
 * project's online agents, optionally narrowed to one workspace (`workspace_id`). A name no online agent
 * offers is 404 `exec_tool_not_found` here (SPEC: 404 on the catalog read, 400 as an invocation target).
 */
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import type { AgentRegistry } from '../core/exec/agent-registry.js';
import { catalogOf, type ToolListing } from '../core/exec/tool-catalog.js';
import { GatewayError } from '../errors.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { requireExecWorkspace } from './exec-workspace.js';
import { keyed } from './guard.js';
import type { Services } from '../app/services.js';

export interface ExecToolsServices extends Services {
  readonly agents: AgentRegistry;
}

export function toolWire(t: ToolListing) {
  return {
    name: t.tool.name,
    description: t.tool.description,
    input_schema: t.tool.input_schema,
    risk: t.tool.risk,
    mcp_visible: t.tool.mcp_visible,
    agent_ids: t.agentIds,
    workspace_ids: t.workspaceIds,
  };
}

export function execToolsRoutes(services: ExecToolsServices): RouteDef[] {
  const listing = (ctx: RouteContext, auth: AuthenticatedKey): ToolListing[] => {
    const projectId = auth.project.id;
    const named = ctx.req.searchParams().get('workspace_id');
    const workspaceId = named === null ? null : requireExecWorkspace(named, auth, services);
    const all = [...services.catalog.workspaces(projectId).keys()];
    const listed = catalogOf(services.agents.online(projectId, workspaceId), workspaceId === null ? all : [workspaceId]);
    // Narrowed to one workspace, an agent serving several shows only that one.
    return workspaceId === null ? listed : listed.map((t) => ({ ...t, workspaceIds: t.workspaceIds.filter((w) => w === workspaceId) }));
  };
  return [
    keyed(services, 'execution', {
      method: 'GET',
      pattern: '/:project/v1/exec/tools',
      family: 'exec',
      handle: (ctx, auth) => ctx.reply.json(200, { object: 'list', data: listing(ctx, auth).map(toolWire) }),
    }),
    keyed(services, 'execution', {
      method: 'GET',
      pattern: '/:project/v1/exec/tools/:tool',
      family: 'exec',
      handle: (ctx, auth) => {
        const name = ctx.req.params.tool ?? '';
        const found = listing(ctx, auth).find((t) => t.tool.name === name);
        if (!found) throw new GatewayError('exec_tool_not_found', { status: 404, param: 'tool_name', message: `No online agent offers a tool named ${JSON.stringify(name.slice(0, 64))}.` });
        ctx.reply.json(200, toolWire(found));
      },
    }),
  ];
}
