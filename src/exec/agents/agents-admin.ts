/**
 * The management use cases of the agents' side (docs/exec.md "Management routes"): join keys and agents.
 * Every change writes its row and its event in one transaction (the storage port's writes); a change that
 * concerns a connected agent reaches it after the commit (its workspaces, or its socket closed).
 */
import { GatewayError } from '../../errors.js';
import type { ExecAgentsStore } from '../../core/store/exec-agents-store.js';
import { agentEvents } from './agent-events.js';
import { hashCredential, mintAgentKey, mintJoinKey, newJoinKeyId } from './credentials.js';
import type { LocalAgentRegistry } from './local-agent-registry.js';
import { CLOSE } from './protocol.js';
import type { AgentRecord, JoinKeyRecord } from './records.js';

export interface AgentPatch {
  readonly description?: string | null;
  readonly workspaceIds?: readonly string[];
}

export interface AgentsAdmin {
  createJoinKey(projectId: string, name: string | null): Promise<{ record: JoinKeyRecord; value: string }>;
  listJoinKeys(projectId: string): Promise<JoinKeyRecord[]>;
  /** Revoking twice answers the same and emits once. */
  revokeJoinKey(projectId: string, id: string): Promise<JoinKeyRecord>;
  listAgents(projectId: string): Promise<AgentRecord[]>;
  /** A deleted agent too (deleted_at set). */
  getAgent(projectId: string, id: string): Promise<AgentRecord>;
  updateAgent(projectId: string, id: string, patch: AgentPatch): Promise<AgentRecord>;
  /** Soft delete; deleting twice answers the same and emits once. */
  deleteAgent(projectId: string, id: string): Promise<AgentRecord>;
  rotateAgentKey(projectId: string, id: string): Promise<{ agent: AgentRecord; value: string }>;
}

export interface AgentsAdminDeps {
  readonly store: ExecAgentsStore;
  readonly registry: LocalAgentRegistry;
  readonly now: () => number;
}

export function createAgentsAdmin(deps: AgentsAdminDeps): AgentsAdmin {
  const { store, registry } = deps;

  const joinKey = async (projectId: string, id: string): Promise<JoinKeyRecord> => {
    const k = await store.findJoinKey(projectId, id);
    if (!k) throw new GatewayError('join_key_not_found', { message: `Project ${projectId} has no join key ${JSON.stringify(id)}.` });
    return k;
  };
  const agent = async (projectId: string, id: string): Promise<AgentRecord> => {
    const a = await store.findAgent(projectId, id);
    if (!a) throw new GatewayError('agent_not_found', { message: `Project ${projectId} has no execution agent ${JSON.stringify(id)}.` });
    return a;
  };
  const liveAgent = async (projectId: string, id: string): Promise<AgentRecord> => {
    const a = await agent(projectId, id);
    if (a.deletedAt !== null) throw new GatewayError('invalid_state', { message: `Agent ${id} was deleted; a deleted agent cannot change.` });
    return a;
  };

  return {
    async createJoinKey(projectId, name) {
      const value = mintJoinKey();
      const record: JoinKeyRecord = { id: newJoinKeyId(), projectId, name, createdAt: deps.now(), revokedAt: null };
      await store.insertJoinKey(record, hashCredential(value), [agentEvents.joinKeyCreated(record)]);
      return { record, value };
    },
    listJoinKeys: (projectId) => store.listJoinKeys(projectId),
    async revokeJoinKey(projectId, id) {
      const key = await joinKey(projectId, id);
      const now = deps.now();
      // Guarded (revoked_at still unset): the event is written by the first revocation only.
      await store.revokeJoinKey(projectId, key.id, now, [agentEvents.joinKeyRevoked(key, now)]);
      return joinKey(projectId, id);
    },
    listAgents: (projectId) => store.listAgents(projectId),
    getAgent: agent,
    async updateAgent(projectId, id, patch) {
      const current = await liveAgent(projectId, id);
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
      await store.updateAgent(next, [agentEvents.updated(next, changed)]);
      registry.setWorkspaces(next.id, next.workspaceIds);
      return next;
    },
    async deleteAgent(projectId, id) {
      const current = await agent(projectId, id);
      let deleted = current;
      if (current.deletedAt === null) {
        const now = deps.now();
        // Guarded (deleted_at still unset): a concurrent delete answers the same and emits once.
        if (await store.softDeleteAgent(current.id, now, [agentEvents.deleted(current, now)])) deleted = { ...current, deletedAt: now, updatedAt: now };
        else deleted = await agent(projectId, id);
      }
      registry.disconnect(deleted.id, 'deleted', CLOSE.deleted, 'agent deleted');
      return deleted;
    },
    async rotateAgentKey(projectId, id) {
      const value = mintAgentKey();
      const current = await liveAgent(projectId, id);
      const now = deps.now();
      await store.setAgentKeyHash(current.id, hashCredential(value), now, [agentEvents.keyRotated(current, now)]);
      const rotated = { ...current, updatedAt: now };
      // The old key stops at once, also for the connection it opened (it may be the leaked copy's).
      registry.disconnect(rotated.id, 'disconnected', CLOSE.keyRevoked, 'agent key rotated: reconnect with the new key');
      return { agent: rotated, value };
    },
  };
}
