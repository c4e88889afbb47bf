/**
 * The tools catalog (docs/exec.md `GET /v1/exec/tools`): the tools of the online agents, one entry per
 * name, with the agents that offer it and the workspaces where it can run. When several agents offer one
 * name, the least busy agent's definition is shown (the one a new invocation would be validated against:
 * the registry lists agents least busy first).
 */
import type { ExecTool, OnlineAgent } from './agent-registry.js';

export interface ToolListing {
  readonly tool: ExecTool;
  readonly agentIds: readonly string[];
  /** Concrete ids: an agent serving every workspace contributes all of the project's. */
  readonly workspaceIds: readonly string[];
}

export function catalogOf(agents: readonly OnlineAgent[], projectWorkspaceIds: readonly string[]): ToolListing[] {
  const byName = new Map<string, { tool: ExecTool; agentIds: string[]; workspaceIds: Set<string> }>();
  for (const agent of agents) {
    const served = agent.workspaceIds.length === 0 ? projectWorkspaceIds : agent.workspaceIds;
    for (const tool of agent.tools.values()) {
      let entry = byName.get(tool.name);
      if (!entry) byName.set(tool.name, (entry = { tool, agentIds: [], workspaceIds: new Set() }));
      entry.agentIds.push(agent.id);
      for (const w of served) entry.workspaceIds.add(w);
    }
  }
  return [...byName.values()]
    .map((e) => ({ tool: e.tool, agentIds: e.agentIds, workspaceIds: [...e.workspaceIds].sort() }))
    .sort((a, b) => (a.tool.name < b.tool.name ? -1 : a.tool.name > b.tool.name ? 1 : 0));
}
