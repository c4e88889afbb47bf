/**
 * The management use cases of the agents' side (docs/exec.md "Management routes"): join keys and agents.
 * Every change writes its row and its event in one transaction (the outbox contract); a change that
 * concerns a connected agent reaches it after the commit (its workspaces, or its socket closed).
 */
import { GatewayError } from '../../errors.js';
import { agentEvents, type AgentEvent } from './agent-events.js';
import { hashCredential, mintAgentKey, mintJoinKey, newJoinKeyId } from './credentials.js';
import type { LocalAgentRegistry } from './local-agent-registry.js';
import { CLOSE } from './protocol.js';
import type { AgentRecord, AgentsStore, JoinKeyRecord, JoinKeysStore } from './records.js';

export interface AgentPatch {
  readonly description?: string | null;
  readonly workspaceIds?: readonly string[];
}

export interface AgentsAdmin {
  createJoinKey(projectId: string, name: string | null): { record: JoinKeyRecord; value: string };
  listJoinKeys(projectId: string): JoinKeyRecord[];
  /** Revoking twice answers the same and emits once. */
  revokeJoinKey(projectId: string, id: string): JoinKeyRecord;
  listAgents(projectId: string): AgentRecord[];
  /** A deleted agent too (deleted_at set). */
  getAgent(projectId: string, id: string): AgentRecord;
  updateAgent(projectId: string, id: string, patch: AgentPatch): AgentRecord;
  /** Soft delete; deleting twice answers the same and emits once. */
  deleteAgent(projectId: string, id: string): AgentRecord;
  rotateAgentKey(projectId: string, id: string): { agent: AgentRecord; value: string };
}

export interface AgentsAdminDeps {
  readonly agents: AgentsStore;
  readonly joinKeys: JoinKeysStore;
  readonly registry: LocalAgentRegistry;
  readonly transaction: <T>(fn: () => T) => T;
  readonly emit: (projectId: string, event: AgentEvent) => void;
  readonly now: () => number;
}

export function createAgentsAdmin(deps: AgentsAdminDeps): AgentsAdmin {
  const { agents, joinKeys, registry, transaction, emit } = deps;

  const joinKey = (projectId: string, id: string): JoinKeyRecord => {
    const k = joinKeys.find(projectId, id);
    if (!k) throw new GatewayError('join_key_not_found', { message: `Project ${projectId} has no join key ${JSON.stringify(id)}.` });
    return k;
  };
  const agent = (projectId: string, id: string): AgentRecord => {
    const a = agents.find(projectId, id);
    if (!a) throw new GatewayError('agent_not_found', { message: `Project ${projectId} has no execution agent ${JSON.stringify(id)}.` });
    return a;
  };
  const liveAgent = (projectId: string, id: string): AgentRecord => {
    const a = agent(projectId, id);
    if (a.deletedAt !== null) throw new GatewayError('invalid_state', { message: `Agent ${id} was deleted; a deleted agent cannot change.` });
    return a;
  };

  return {
    createJoinKey(projectId, name) {
      const value = mintJoinKey();
      const record: JoinKeyRecord = { id: newJoinKeyId(), projectId, name, createdAt: deps.now(), revokedAt: null };
      transaction(() => {
        joinKeys.insert(record, hashCredential(value));
        emit(projectId, agentEvents.joinKeyCreated(record));
      });
      return { record, value };
    },
    listJoinKeys: (projectId) => joinKeys.list(projectId),
    revokeJoinKey(projectId, id) {
      return transaction(() => {
        const key = joinKey(projectId, id);
        const now = deps.now();
        if (joinKeys.revoke(projectId, key.id, now)) emit(projectId, agentEvents.joinKeyRevoked(key, now));
        return joinKey(projectId, id);
      });
    },
    listAgents: (projectId) => agents.list(projectId),
    getAgent: agent,
    updateAgent(projectId, id, patch) {
      const updated = transaction(() => {
        const current = liveAgent(projectId, id);
        const changed: string[] = [];
        if (patch.description !== undefined) changed.push('description');
        if (patch.workspaceIds !== undefined) changed.push('workspace_ids');
        if (changed.length === 0) return current;
        const next: AgentRecord = {
          ...current,
          description: patch.description === undefined ? current.description : patch.description,
          workspaceIds: patch.workspaceIds ?? current.workspaceIds,
          updatedAt: deps.now(),
        };
        agents.update(next);
        emit(projectId, agentEvents.updated(next, changed));
        return next;
      });
      registry.setWorkspaces(updated.id, updated.workspaceIds);
      return updated;
    },
    deleteAgent(projectId, id) {
      const deleted = transaction(() => {
        const current = agent(projectId, id);
        if (current.deletedAt !== null) return current;
        const now = deps.now();
        agents.softDelete(current.id, now);
        emit(projectId, agentEvents.deleted(current, now));
        return { ...current, deletedAt: now, updatedAt: now };
      });
      registry.disconnect(deleted.id, 'deleted', CLOSE.deleted, 'agent deleted');
      return deleted;
    },
    rotateAgentKey(projectId, id) {
      const value = mintAgentKey();
      const rotated = transaction(() => {
        const current = liveAgent(projectId, id);
        const now = deps.now();
        agents.setKeyHash(current.id, hashCredential(value), now);
        emit(projectId, agentEvents.keyRotated(current, now));
        return { ...current, updatedAt: now };
      });
      // The old key stops at once, also for the connection it opened (it may be the leaked copy's).
      registry.disconnect(rotated.id, 'disconnected', CLOSE.keyRevoked, 'agent key rotated: reconnect with the new key');
      return { agent: rotated, value };
    },
  };
}
