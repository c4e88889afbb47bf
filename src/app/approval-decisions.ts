/**
 * Human approvals of exec invocations (docs/exec.md "Approvals", "Who decides"): list, accept, reject. The
 * exec approvals routes and the MCP `exec.approval_*` tools (deciding as an API key) and the dashboard's
 * approvals page (deciding as a signed-in user) run these. Each says which workspaces its principal may
 * use, and an approval outside them reads as absent (404 approval_not_found), never as forbidden.
 *
 * SPEC: an approval is human ("with human approvals") and `exec.approved` is "granted by a privileged
 * user". So a decision needs a privileged principal, an owner or admin of the project (signed in, or
 * through an API key that user owns) or a key with no user holding the `management` scope, and never the
 * one that asked: not the key that created the invocation, nor any key of the same user (an MCP session or
 * a chat turn runs as its key), nor a key whose value the asking key or user received (it created or
 * rotated it through the management API or the dashboard, directly or through keys it so issued: one
 * holder with two keys). Anything else is 403 approval_not_permitted.
 */
import type { Scope } from '../config.js';
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import type { Approval, Requester } from '../core/exec/approval-machine.js';
import type { PageQuery } from '../core/store/exec-invocations-store.js';
import type { ProjectRole } from '../core/store/identity-store.js';
import { GatewayError } from '../errors.js';
import type { InvocationService } from '../exec/invocations/invocation-service.js';

/** Who decides: an id recorded as `decided_by`, the principal behind it, the workspaces it may use. */
export interface Decider {
  readonly id: string;
  /** The API key deciding; null for a user signed in to the dashboard. */
  readonly keyId: string | null;
  /** The user deciding (a signed-in user, or the owner of the key); null for a key with no user. */
  readonly userId: string | null;
  /** A key's scopes (a key with no user is privileged by `management`); null for a signed-in user. */
  readonly scopes: readonly Scope[] | null;
  /** Who received the deciding key's value (ApiKeyRecord.issuedBy); null for a signed-in user. */
  readonly issuedBy: string | null;
  mayUse(workspaceId: string): boolean;
  /** "this API key", "your account". */
  readonly label: string;
}

/** The user's role in the project (null: none), from the identity store. */
export type RoleLookup = (userId: string, projectId: string) => Promise<ProjectRole | null>;

/** A key's user and who received its value (ApiKeyRecord), or null when the project has no such key. */
export type KeyIssuance = (projectId: string, keyId: string) => Promise<{ readonly userId: string | null; readonly issuedBy: string | null } | null>;

/** Keys issued by keys deeper than this are not followed further: the decision is refused (fails closed). */
const MAX_ISSUANCE_DEPTH = 64;

/** Who asks for an invocation: the key, and the user owning it. */
export const requesterOf = (a: AuthenticatedKey): Requester => ({ keyId: a.key.id, userId: a.key.userId });

const WHO_MAY =
  'Approvals are decided by an owner or admin of the project (in the dashboard, or with an API key that user owns) or by an API key with no user holding the management scope';

export function createApprovalDecisions(exec: InvocationService, roleOf: RoleLookup, issuanceOf: KeyIssuance) {
  /** Why this principal may decide no approval of the project; null when it may decide. */
  const unprivileged = async (projectId: string, who: Decider): Promise<string | null> => {
    if (who.userId === null) {
      if (who.scopes?.includes('management')) return null;
      return `${WHO_MAY}; this API key has no user and lacks the management scope.`;
    }
    const role = await roleOf(who.userId, projectId);
    if (role === 'owner' || role === 'admin') return null;
    const held = role === null ? 'has no role' : `is a ${role}`;
    const whose = who.keyId === null ? 'your account' : `this API key's user ${who.userId}`;
    return `${WHO_MAY}; ${whose} ${held} in project ${projectId}.`;
  };

  /**
   * Who else holds the deciding key's value: whoever received it (ApiKeyRecord.issuedBy), that key's user
   * and whoever received that key's value, and so on. null past MAX_ISSUANCE_DEPTH.
   */
  const holders = async (projectId: string, who: Decider): Promise<{ keys: Set<string>; users: Set<string> } | null> => {
    const keys = new Set<string>();
    const users = new Set<string>();
    let next = who.issuedBy;
    for (let depth = 0; next !== null; depth += 1) {
      if (depth === MAX_ISSUANCE_DEPTH) return null;
      // A cycle (two keys that rotated each other): every holder on it is already counted.
      if (keys.has(next) || next === who.keyId) break;
      const issuer = await issuanceOf(projectId, next);
      if (issuer === null) {
        // Not a key of the project: the dashboard user the value was shown to.
        users.add(next);
        break;
      }
      keys.add(next);
      if (issuer.userId !== null) users.add(issuer.userId);
      next = issuer.issuedBy;
    }
    return { keys, users };
  };

  /** Why this principal may not decide this approval because it asked for it; null otherwise. */
  const selfDecision = async (projectId: string, a: Approval, who: Decider): Promise<string | null> => {
    const asked = a.requester;
    if (asked.keyId !== null && asked.keyId === who.keyId) return `Approval ${a.id} was requested with this API key (${asked.keyId}); someone else must decide it.`;
    if (asked.userId !== null && asked.userId === who.userId) {
      return `Approval ${a.id} was requested by user ${asked.userId} (with key ${asked.keyId ?? 'unknown'}); another privileged principal must decide it.`;
    }
    if (who.issuedBy === null) return null;
    const chain = await holders(projectId, who);
    if (chain === null) return `This API key was issued through more than ${MAX_ISSUANCE_DEPTH} keys; approval ${a.id} must be decided by another principal.`;
    if (asked.keyId !== null && chain.keys.has(asked.keyId)) {
      return `Approval ${a.id} was requested with key ${asked.keyId}, which received the value of this API key (${who.keyId ?? ''}) or of a key it was issued from; someone else must decide it.`;
    }
    if (asked.userId !== null && chain.users.has(asked.userId)) {
      return `Approval ${a.id} was requested by user ${asked.userId}, who received the value of this API key (${who.keyId ?? ''}) or of a key it was issued from; someone else must decide it.`;
    }
    return null;
  };

  /** 403 when it may decide nothing, 404 outside its workspaces, 403 when it asked: the approval otherwise. */
  const decidable = async (projectId: string, approvalId: string, who: Decider): Promise<void> => {
    const refused = await unprivileged(projectId, who);
    if (refused) throw new GatewayError('approval_not_permitted', { message: refused });
    const approval = await exec.approval(projectId, approvalId);
    if (!who.mayUse(approval.workspaceId)) {
      throw new GatewayError('approval_not_found', { param: 'approval_id', message: `No approval ${approvalId} in the workspaces ${who.label} may use.` });
    }
    const own = await selfDecision(projectId, approval, who);
    if (own) throw new GatewayError('approval_not_permitted', { param: 'approval_id', message: own });
  };

  return {
    /** Whether this principal may decide any approval of the project (MCP lists the decide tools then). */
    mayDecide: async (projectId: string, who: Decider): Promise<boolean> => (await unprivileged(projectId, who)) === null,
    /** Newest first; `workspaceIds` null: every workspace. 400 invalid_query when `after` names none. */
    async list(projectId: string, q: PageQuery): Promise<{ items: Approval[]; hasMore: boolean }> {
      const page = await exec.listApprovals(projectId, q);
      if (!page) throw new GatewayError('invalid_query', { param: 'after', message: `after names no approval of this project: ${JSON.stringify(q.after)}.` });
      return page;
    },
    async accept(projectId: string, approvalId: string, who: Decider): Promise<Approval> {
      await decidable(projectId, approvalId, who);
      return exec.accept(projectId, approvalId, who.id);
    },
    async reject(projectId: string, approvalId: string, who: Decider, reason: string | null): Promise<Approval> {
      await decidable(projectId, approvalId, who);
      return exec.reject(projectId, approvalId, who.id, reason);
    },
  };
}

export type ApprovalDecisions = ReturnType<typeof createApprovalDecisions>;
