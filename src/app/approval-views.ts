/**
 * What an approver needs to see before deciding (issue 34, "Approvals"): the invocation's arguments, the
 * agent that runs it (or, while it waits, the one that would take it now), who asked (the key's name and
 * its user's name) and who decided, by name. The approvals themselves are app/approval-decisions.ts's;
 * this only reads around them, for the dashboard's approvals page.
 *
 * `decided_by` is a user id (`usr_`: a signed-in user, or the user owning the deciding key) or, for a key
 * with no user, the key's id (app/exec-views.ts `keyDecider`): both are named here.
 */
import type { Approval } from '../core/exec/approval-machine.js';
import type { Invocation } from '../core/exec/invocation-machine.js';
import type { UserRecord } from '../core/store/identity-store.js';

export interface ApprovalViewsDeps {
  readonly invocation: (projectId: string, invocationId: string) => Promise<Invocation>;
  /** The agent's registration name; null when the project has no such agent. */
  readonly agentName: (projectId: string, agentId: string) => Promise<string | null>;
  /** The online agents that would take this tool in this workspace now, least busy first. */
  readonly candidates: (projectId: string, workspaceId: string, toolName: string) => readonly { readonly id: string; readonly registrationName: string }[];
  /** The project's API keys (revoked ones too): id to name (null: unnamed). */
  readonly keyNames: (projectId: string) => Promise<ReadonlyMap<string, string | null>>;
  readonly user: (userId: string) => Promise<UserRecord | null>;
}

/** A person or key, by name, with the id beside it. */
export interface Named {
  readonly id: string;
  readonly name: string;
}

export interface ApprovalView {
  readonly approval: Approval;
  /** null when the invocation could not be read. */
  readonly arguments: Record<string, unknown> | null;
  /** `ran`: dispatched there; `would-run`: the agent that takes it now if accepted. null: none online. */
  readonly agent: (Named & { readonly how: 'ran' | 'would-run' }) | null;
  readonly requesterKey: Named | null;
  readonly requesterUser: Named | null;
  readonly decider: Named | null;
}

export function createApprovalViews(deps: ApprovalViewsDeps) {
  return {
    async describe(projectId: string, approvals: readonly Approval[]): Promise<ApprovalView[]> {
      if (approvals.length === 0) return [];
      const keys = await deps.keyNames(projectId);
      // One lookup per user or agent on the page, however many approvals name them.
      const users = new Map<string, Promise<UserRecord | null>>();
      const userOf = (id: string): Promise<UserRecord | null> => users.get(id) ?? users.set(id, deps.user(id)).get(id) ?? Promise.resolve(null);
      const agents = new Map<string, Promise<string | null>>();
      const agentOf = (id: string): Promise<string | null> => agents.get(id) ?? agents.set(id, deps.agentName(projectId, id)).get(id) ?? Promise.resolve(null);
      const keyNamed = (id: string): Named => ({ id, name: keys.get(id) ?? id });
      const userNamed = async (id: string): Promise<Named> => {
        const u = await userOf(id);
        return { id, name: u ? u.name || u.email : 'a deleted user' };
      };
      const whoDecided = async (id: string | null): Promise<Named | null> => {
        if (id === null) return null;
        return id.startsWith('usr_') ? userNamed(id) : keyNamed(id);
      };

      return Promise.all(
        approvals.map(async (a): Promise<ApprovalView> => {
          const inv = await deps.invocation(projectId, a.invocationId).catch(() => null);
          let agent: ApprovalView['agent'] = null;
          if (inv?.agentId) agent = { id: inv.agentId, name: (await agentOf(inv.agentId)) ?? inv.agentId, how: 'ran' };
          else if (a.state === 'pending') {
            const next = deps.candidates(projectId, a.workspaceId, a.toolName)[0];
            if (next) agent = { id: next.id, name: next.registrationName, how: 'would-run' };
          }
          return {
            approval: a,
            arguments: inv?.arguments ?? null,
            agent,
            requesterKey: a.requester.keyId === null ? null : keyNamed(a.requester.keyId),
            requesterUser: a.requester.userId === null ? null : await userNamed(a.requester.userId),
            decider: await whoDecided(a.decidedBy),
          };
        }),
      );
    },
  };
}

export type ApprovalViews = ReturnType<typeof createApprovalViews>;
