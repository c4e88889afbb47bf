/**
 * The exec agents port on this instance's SQLite file: store/exec-join-keys-repo.ts and
 * store/exec-agents-repo.ts unchanged underneath, behind promises; each write and its events in one write
 * transaction on the connection the outbox writes on.
 */
import type { ExecAgentsStore, StoredEvent } from '../../core/store/exec-agents-store.js';
import type { EventOutbox } from '../../core/webhooks/outbox.js';
import { writeTransaction, type Db } from '../db.js';
import { createAgentsRepo } from '../exec-agents-repo.js';
import { createJoinKeysRepo } from '../exec-join-keys-repo.js';

export function createSqliteExecAgentsStore(db: Db, outbox: EventOutbox): ExecAgentsStore {
  const agents = createAgentsRepo(db);
  const joinKeys = createJoinKeysRepo(db);
  /** `write`, then the events if it changed something, in one transaction. */
  const withEvents = (projectId: () => string | null, events: readonly StoredEvent[], write: () => boolean): boolean =>
    writeTransaction(db, () => {
      if (!write()) return false;
      const project = projectId();
      if (project !== null) for (const e of events) outbox.emit(project, e.type, e.data);
      return true;
    })();
  const projectOfAgent = (id: string) => (): string | null =>
    db.prepare<[string], { project_id: string }>('SELECT project_id FROM exec_agents WHERE id = ?').get(id)?.project_id ?? null;
  return {
    insertJoinKey: async (record, keyHash, events) => void withEvents(() => record.projectId, events, () => (joinKeys.insert(record, keyHash), true)),
    listJoinKeys: async (projectId) => joinKeys.list(projectId),
    findJoinKey: async (projectId, id) => joinKeys.find(projectId, id),
    findJoinKeyByHash: async (keyHash) => joinKeys.findByHash(keyHash),
    revokeJoinKey: async (projectId, id, at, events) => withEvents(() => projectId, events, () => joinKeys.revoke(projectId, id, at)),
    insertAgent: async (record, keyHash, events) => withEvents(() => record.projectId, events, () => agents.insert(record, keyHash)),
    listAgents: async (projectId) => agents.list(projectId),
    findAgent: async (projectId, id) => agents.find(projectId, id),
    findAgentByHash: async (keyHash) => agents.findByHash(keyHash),
    findLiveAgentByName: async (projectId, name) => agents.findLiveByName(projectId, name),
    enrolled: async (record, events) => withEvents(() => record.projectId, events, () => agents.enrolled(record)),
    updateAgent: async (record, events) => void withEvents(() => record.projectId, events, () => (agents.update(record), true)),
    setAgentKeyHash: async (id, keyHash, at, events) => void withEvents(projectOfAgent(id), events, () => (agents.setKeyHash(id, keyHash, at), true)),
    softDeleteAgent: async (id, at, events) =>
      withEvents(projectOfAgent(id), events, () => db.prepare('UPDATE exec_agents SET deleted_at = ?, updated_at = ? WHERE id = ? AND deleted_at IS NULL').run(at, at, id).changes > 0),
    lastSeen: async (id, at) => agents.lastSeen(id, at),
  };
}
