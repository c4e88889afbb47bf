/**
 * The exec agents port on PostgreSQL (tables: migrations/009-exec.ts): join keys and agents shared by the
 * replicas, so a join key minted through one replica enrolls an agent connecting to another, and the
 * management routes of every replica list the same agents. Each write commits with its events
 * (exec-events.ts); the partial unique index on live names decides between replicas enrolling one name.
 */
import type pg from 'pg';
import type { AgentRecord, JoinKeyRecord } from '../../core/exec/agent-records.js';
import type { ExecAgentsStore, StoredEvent } from '../../core/store/exec-agents-store.js';
import { AGENT_COLUMNS, toAgent, type AgentRow } from '../exec-rows.js';
import { appendExecEvents } from './exec-events.js';
import type { PgStore } from './pg-store.js';

interface JoinKeyRow {
  id: string;
  project_id: string;
  name: string | null;
  created_at: number;
  revoked_at: number | null;
}

const JOIN_KEY_COLUMNS = 'id, project_id, name, created_at, revoked_at';

const toJoinKey = (r: JoinKeyRow): JoinKeyRecord => ({ id: r.id, projectId: r.project_id, name: r.name, createdAt: r.created_at, revokedAt: r.revoked_at });

export function createPgExecAgentsStore(store: PgStore): ExecAgentsStore {
  const { pool } = store;
  /**
   * `sql` in a transaction, then the events if it changed a row, with the project of the row it returned
   * (`RETURNING project_id`) and `at` as the events' time.
   */
  const write = (sql: string, params: unknown[], events: readonly StoredEvent[], at: number): Promise<boolean> =>
    store.transaction(async (client) => {
      const { rows } = await client.query<{ project_id: string }>(sql, params);
      const row = rows[0];
      if (!row) return false;
      await appendExecEvents(store, client, row.project_id, events, at);
      return true;
    });
  const joinKey = async (sql: string, params: unknown[]): Promise<JoinKeyRecord | null> => {
    const row = (await pool.query<JoinKeyRow>(sql, params)).rows[0];
    return row ? toJoinKey(row) : null;
  };
  const agent = async (sql: string, params: unknown[]): Promise<AgentRecord | null> => {
    const row = (await pool.query<AgentRow>(sql, params)).rows[0];
    return row ? toAgent(row) : null;
  };

  return {
    async insertJoinKey(r, keyHash, events) {
      await write(
        'INSERT INTO exec_join_keys (id, project_id, name, key_hash, created_at, revoked_at) VALUES ($1, $2, $3, $4, $5, NULL) RETURNING project_id',
        [r.id, r.projectId, r.name, keyHash, r.createdAt],
        events,
        r.createdAt,
      );
    },
    listJoinKeys: async (projectId) =>
      (await pool.query<JoinKeyRow>(`SELECT ${JOIN_KEY_COLUMNS} FROM exec_join_keys WHERE project_id = $1 ORDER BY seq DESC`, [projectId])).rows.map(toJoinKey),
    findJoinKey: (projectId, id) => joinKey(`SELECT ${JOIN_KEY_COLUMNS} FROM exec_join_keys WHERE project_id = $1 AND id = $2`, [projectId, id]),
    findJoinKeyByHash: (keyHash) => joinKey(`SELECT ${JOIN_KEY_COLUMNS} FROM exec_join_keys WHERE key_hash = $1`, [keyHash]),
    revokeJoinKey: (projectId, id, at, events) =>
      write('UPDATE exec_join_keys SET revoked_at = $3 WHERE project_id = $1 AND id = $2 AND revoked_at IS NULL RETURNING project_id', [projectId, id, at], events, at),

    insertAgent: (r, keyHash, events) =>
      // ON CONFLICT DO NOTHING: another replica's enrollment took the name a moment ago (live-name index).
      write(
        `INSERT INTO exec_agents (id, project_id, registration_name, description, workspace_ids, key_hash, join_key_id, manifest, manifest_hash,
           created_at, enrolled_at, last_seen_at, updated_at, deleted_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, NULL) ON CONFLICT DO NOTHING RETURNING project_id`,
        [r.id, r.projectId, r.registrationName, r.description, JSON.stringify(r.workspaceIds), keyHash, r.joinKeyId, JSON.stringify(r.manifest), r.manifestHash,
          r.createdAt, r.enrolledAt, r.lastSeenAt, r.updatedAt],
        events,
        r.enrolledAt,
      ),
    listAgents: async (projectId) =>
      (await pool.query<AgentRow>(`SELECT ${AGENT_COLUMNS} FROM exec_agents WHERE project_id = $1 AND deleted_at IS NULL ORDER BY seq`, [projectId])).rows.map(toAgent),
    findAgent: (projectId, id) => agent(`SELECT ${AGENT_COLUMNS} FROM exec_agents WHERE project_id = $1 AND id = $2`, [projectId, id]),
    findAgentByHash: (keyHash) => agent(`SELECT ${AGENT_COLUMNS} FROM exec_agents WHERE key_hash = $1`, [keyHash]),
    findLiveAgentByName: (projectId, name) =>
      agent(`SELECT ${AGENT_COLUMNS} FROM exec_agents WHERE project_id = $1 AND registration_name = $2 AND deleted_at IS NULL`, [projectId, name]),
    enrolled: (r, events) =>
      store
        .transaction(async (client) => {
          // The live-name index rejects the update (23505) when another live agent holds the name: false, rolled back.
          const { rows } = await client.query<{ project_id: string }>(
            `UPDATE exec_agents SET registration_name = $2, manifest = $3, manifest_hash = $4, enrolled_at = $5, last_seen_at = $6, updated_at = $7
             WHERE id = $1 RETURNING project_id`,
            [r.id, r.registrationName, JSON.stringify(r.manifest), r.manifestHash, r.enrolledAt, r.lastSeenAt, r.updatedAt],
          );
          const row = rows[0];
          if (!row) return false;
          await appendExecEvents(store, client, row.project_id, events, r.enrolledAt);
          return true;
        })
        .catch((err: unknown) => {
          if (isUniqueViolation(err)) return false;
          throw err;
        }),
    async updateAgent(r, events) {
      await write(
        'UPDATE exec_agents SET description = $2, workspace_ids = $3, updated_at = $4 WHERE id = $1 RETURNING project_id',
        [r.id, r.description, JSON.stringify(r.workspaceIds), r.updatedAt],
        events,
        r.updatedAt,
      );
    },
    async setAgentKeyHash(id, keyHash, at, events) {
      await write('UPDATE exec_agents SET key_hash = $2, updated_at = $3 WHERE id = $1 RETURNING project_id', [id, keyHash, at], events, at);
    },
    softDeleteAgent: (id, at, events) =>
      write('UPDATE exec_agents SET deleted_at = $2, updated_at = $2 WHERE id = $1 AND deleted_at IS NULL RETURNING project_id', [id, at], events, at),
    async lastSeen(id, at) {
      await pool.query('UPDATE exec_agents SET last_seen_at = GREATEST(last_seen_at, $2) WHERE id = $1', [id, at]);
    },
  };
}

function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505';
}
