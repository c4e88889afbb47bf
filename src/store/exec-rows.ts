/**
 * The exec agents' rows as both stores read them (SQLite: exec-agents-repo.ts; PostgreSQL:
 * postgres/exec-agents-store.ts): the same column names in both schemas, one mapping. Invocations and
 * approvals: exec-invocations/exec-invocations-rows.ts.
 */
import type { AgentRecord, Manifest } from '../core/exec/agent-records.js';
import { fromJson } from './json-column.js';

export interface AgentRow {
  id: string;
  project_id: string;
  registration_name: string;
  description: string | null;
  workspace_ids: string;
  join_key_id: string;
  manifest: string;
  manifest_hash: string;
  created_at: number;
  enrolled_at: number;
  last_seen_at: number;
  updated_at: number;
  deleted_at: number | null;
}

export const AGENT_COLUMNS =
  'id, project_id, registration_name, description, workspace_ids, join_key_id, manifest, manifest_hash, created_at, enrolled_at, last_seen_at, updated_at, deleted_at';

export const toAgent = (r: AgentRow): AgentRecord => ({
  id: r.id,
  projectId: r.project_id,
  registrationName: r.registration_name,
  description: r.description,
  workspaceIds: fromJson<string[]>(r.workspace_ids),
  joinKeyId: r.join_key_id,
  manifest: fromJson<Manifest>(r.manifest),
  manifestHash: r.manifest_hash,
  createdAt: r.created_at,
  enrolledAt: r.enrolled_at,
  lastSeenAt: r.last_seen_at,
  updatedAt: r.updated_at,
  deletedAt: r.deleted_at,
});
