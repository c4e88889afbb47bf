/** Enrolled agents (migration 007): the SQL of enrollment, the agent routes and the connect route's key lookup. */
import type { AgentRecord, AgentsStore } from '../exec/agents/records.js';
import type { Db } from './db.js';
import { AGENT_COLUMNS, toAgent, type AgentRow } from './exec-rows.js';
import { toJson } from './json-column.js';


export type AgentsRepo = AgentsStore;

/**
 * Names are unique among a project's live agents (partial index, migration 007). Enrollment checks the
 * name first; the conflict clauses only meet another process's enrollment of the same name in between,
 * and report it as `false` instead of an exception.
 */
export function createAgentsRepo(db: Db): AgentsRepo {
  const insert = db.prepare(`
    INSERT INTO exec_agents (id, project_id, registration_name, description, workspace_ids, key_hash, join_key_id, manifest, manifest_hash,
      created_at, enrolled_at, last_seen_at, updated_at, deleted_at)
    VALUES (@id, @projectId, @registrationName, @description, @workspaceIds, @keyHash, @joinKeyId, @manifest, @manifestHash,
      @createdAt, @enrolledAt, @lastSeenAt, @updatedAt, NULL)
    ON CONFLICT DO NOTHING`);
  const list = db.prepare<[string], AgentRow>(`SELECT ${AGENT_COLUMNS} FROM exec_agents WHERE project_id = ? AND deleted_at IS NULL ORDER BY seq`);
  const byId = db.prepare<[string, string], AgentRow>(`SELECT ${AGENT_COLUMNS} FROM exec_agents WHERE project_id = ? AND id = ?`);
  const byHash = db.prepare<[string], AgentRow>(`SELECT ${AGENT_COLUMNS} FROM exec_agents WHERE key_hash = ?`);
  const byName = db.prepare<[string, string], AgentRow>(
    `SELECT ${AGENT_COLUMNS} FROM exec_agents WHERE project_id = ? AND registration_name = ? AND deleted_at IS NULL`,
  );
  const enrolled = db.prepare(`
    UPDATE OR IGNORE exec_agents SET registration_name = @registrationName, manifest = @manifest, manifest_hash = @manifestHash,
      enrolled_at = @enrolledAt, last_seen_at = @lastSeenAt, updated_at = @updatedAt WHERE id = @id`);
  const update = db.prepare('UPDATE exec_agents SET description = @description, workspace_ids = @workspaceIds, updated_at = @updatedAt WHERE id = @id');
  const setKeyHash = db.prepare('UPDATE exec_agents SET key_hash = ?, updated_at = ? WHERE id = ?');
  const softDelete = db.prepare('UPDATE exec_agents SET deleted_at = ?, updated_at = ? WHERE id = ? AND deleted_at IS NULL');
  const lastSeen = db.prepare('UPDATE exec_agents SET last_seen_at = MAX(last_seen_at, ?) WHERE id = ?');
  const one = (row: AgentRow | undefined): AgentRecord | null => (row ? toAgent(row) : null);
  const params = (r: AgentRecord) => ({
    id: r.id,
    projectId: r.projectId,
    registrationName: r.registrationName,
    description: r.description,
    workspaceIds: toJson(r.workspaceIds),
    joinKeyId: r.joinKeyId,
    manifest: toJson(r.manifest),
    manifestHash: r.manifestHash,
    createdAt: r.createdAt,
    enrolledAt: r.enrolledAt,
    lastSeenAt: r.lastSeenAt,
    updatedAt: r.updatedAt,
  });
  return {
    insert: (r, keyHash) => insert.run({ ...params(r), keyHash }).changes > 0,
    list: (projectId) => list.all(projectId).map(toAgent),
    find: (projectId, id) => one(byId.get(projectId, id)),
    findByHash: (keyHash) => one(byHash.get(keyHash)),
    findLiveByName: (projectId, name) => one(byName.get(projectId, name)),
    enrolled: (r) => {
      const p = params(r);
      const values = { id: p.id, registrationName: p.registrationName, manifest: p.manifest, manifestHash: p.manifestHash, enrolledAt: p.enrolledAt, lastSeenAt: p.lastSeenAt, updatedAt: p.updatedAt };
      return enrolled.run(values).changes > 0;
    },
    update: (r) => void update.run({ id: r.id, description: r.description, workspaceIds: toJson(r.workspaceIds), updatedAt: r.updatedAt }),
    setKeyHash: (id, keyHash, at) => void setKeyHash.run(keyHash, at, id),
    softDelete: (id, at) => void softDelete.run(at, at, id),
    lastSeen: (id, at) => void lastSeen.run(at, id),
  };
}
