/** Join keys (migration 007): the SQL of the join-key routes and of the connect route's key lookup. */
import type { JoinKeyRecord, JoinKeysStore } from '../exec/agents/records.js';
import type { Db } from './db.js';

interface JoinKeyRow {
  id: string;
  project_id: string;
  name: string | null;
  created_at: number;
  revoked_at: number | null;
}

const toRecord = (r: JoinKeyRow): JoinKeyRecord => ({ id: r.id, projectId: r.project_id, name: r.name, createdAt: r.created_at, revokedAt: r.revoked_at });
const COLUMNS = 'id, project_id, name, created_at, revoked_at';

export type JoinKeysRepo = JoinKeysStore;

export function createJoinKeysRepo(db: Db): JoinKeysRepo {
  const insert = db.prepare('INSERT INTO exec_join_keys (id, project_id, name, key_hash, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, NULL)');
  const list = db.prepare<[string], JoinKeyRow>(`SELECT ${COLUMNS} FROM exec_join_keys WHERE project_id = ? ORDER BY seq DESC`);
  const byId = db.prepare<[string, string], JoinKeyRow>(`SELECT ${COLUMNS} FROM exec_join_keys WHERE project_id = ? AND id = ?`);
  const byHash = db.prepare<[string], JoinKeyRow>(`SELECT ${COLUMNS} FROM exec_join_keys WHERE key_hash = ?`);
  const revoke = db.prepare('UPDATE exec_join_keys SET revoked_at = ? WHERE project_id = ? AND id = ? AND revoked_at IS NULL');
  const one = (row: JoinKeyRow | undefined): JoinKeyRecord | null => (row ? toRecord(row) : null);
  return {
    insert: (r, keyHash) => void insert.run(r.id, r.projectId, r.name, keyHash, r.createdAt),
    list: (projectId) => list.all(projectId).map(toRecord),
    find: (projectId, id) => one(byId.get(projectId, id)),
    findByHash: (keyHash) => one(byHash.get(keyHash)),
    revoke: (projectId, id, at) => revoke.run(at, projectId, id).changes > 0,
  };
}
