/** The exec agents rows (exec-agents-tables.ts) as core's records. */
import type { Selectable } from 'kysely';
import type { AgentRecord, JoinKeyRecord, Manifest } from '../../core/exec/agent-records.js';
import { fromJson } from '../json-column.js';
import type { ExecAgentsTables } from './exec-agents-tables.js';

/** What a read returns: every column but the sequence and the key's hash (a secret's digest stays in the store). */
export const JOIN_KEY_COLUMNS = ['id', 'project_id', 'name', 'created_at', 'revoked_at'] as const;
export const AGENT_COLUMNS = [
  'id',
  'project_id',
  'registration_name',
  'description',
  'workspace_ids',
  'join_key_id',
  'manifest',
  'manifest_hash',
  'created_at',
  'enrolled_at',
  'last_seen_at',
  'updated_at',
  'deleted_at',
] as const;

type JoinKeyRow = Pick<Selectable<ExecAgentsTables['exec_join_keys']>, (typeof JOIN_KEY_COLUMNS)[number]>;
type AgentRow = Pick<Selectable<ExecAgentsTables['exec_agents']>, (typeof AGENT_COLUMNS)[number]>;

export const toJoinKey = (r: JoinKeyRow): JoinKeyRecord => ({ id: r.id, projectId: r.project_id, name: r.name, createdAt: r.created_at, revokedAt: r.revoked_at });

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
