import { describe, expect, it } from 'vitest';
import type { ExecTool, OnlineAgent } from '../../../../src/core/exec/agent-registry.js';
import { catalogOf } from '../../../../src/core/exec/tool-catalog.js';

const tool = (name: string, description = name): ExecTool => ({ name, description, input_schema: { type: 'object' }, risk: 'read', mcp_visible: true });
const agent = (id: string, workspaceIds: string[], tools: ExecTool[]): OnlineAgent => ({
  id,
  projectId: 'proj_x',
  registrationName: id,
  workspaceIds,
  tools: new Map(tools.map((t) => [t.name, t])),
  running: 0,
});

describe('tools catalog', () => {
  it('lists each name once with its agents and workspaces, sorted by name', () => {
    const listed = catalogOf([agent('agt_a', ['ws_02'], [tool('zip'), tool('echo', 'first')]), agent('agt_b', [], [tool('echo', 'second')])], ['ws_01', 'ws_02']);
    expect(listed.map((t) => [t.tool.name, t.tool.description, t.agentIds, t.workspaceIds])).toEqual([
      ['echo', 'first', ['agt_a', 'agt_b'], ['ws_01', 'ws_02']],
      ['zip', 'zip', ['agt_a'], ['ws_02']],
    ]);
  });

  it('is empty with no agent online', () => {
    expect(catalogOf([], ['ws_01'])).toEqual([]);
  });
});
