/**
 * The services behind the dashboard's people-facing pages (issue 34): the names around each approval
 * (app/approval-views.ts) and a project's members (auth/project-members.ts), built from what the
 * composition root already has, so src/main.ts wires them in one line.
 */
import { createApprovalViews, type ApprovalViews } from '../app/approval-views.js';
import type { AgentRegistry } from '../core/exec/agent-registry.js';
import type { CatalogStore } from '../core/store/catalog-store.js';
import type { UsersStore } from '../core/store/identity-store.js';
import type { AgentsAdmin } from '../exec/agents/agents-admin.js';
import type { InvocationService } from '../exec/invocations/invocation-service.js';
import { createProjectMembers, type ProjectMembers } from './auth/project-members.js';

export interface PeopleServicesDeps {
  readonly users: UsersStore;
  readonly keys: Pick<CatalogStore, 'listForProject'>;
  readonly exec: Pick<InvocationService, 'get'>;
  readonly agents: { readonly admin: Pick<AgentsAdmin, 'getAgent'>; readonly registry: Pick<AgentRegistry, 'candidates'> };
  readonly now: () => number;
  readonly reloadCredentials: () => void | Promise<void>;
}

export function peopleServices(d: PeopleServicesDeps): { approvalViews: ApprovalViews; members: ProjectMembers } {
  return {
    approvalViews: createApprovalViews({
      invocation: (projectId, id) => d.exec.get(projectId, id),
      agentName: async (projectId, id) => (await d.agents.admin.getAgent(projectId, id).catch(() => null))?.registrationName ?? null,
      candidates: (projectId, workspaceId, tool) => d.agents.registry.candidates(projectId, workspaceId, tool),
      keyNames: async (projectId) => new Map((await d.keys.listForProject(projectId)).map((k) => [k.id, k.name])),
      user: (id) => d.users.byId(id),
    }),
    members: createProjectMembers({ users: d.users, now: d.now, reloadCredentials: d.reloadCredentials }),
  };
}
