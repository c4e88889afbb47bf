/**
 * The exec agents port (core/store/exec-agents-store.ts), written once for SQLite and PostgreSQL (issue
 * 33): join keys and enrolled agents, each method a program (store/sql/sql-program.ts) its backend's
 * runner drives. On PostgreSQL the rows are shared by the replicas: a join key minted through one enrolls
 * an agent connecting to another. Every write is guarded (it names the row it changed with RETURNING) and
 * commits its events with the row, in one transaction; a write that changed nothing writes no event. The
 * partial unique index on live names decides between two enrollments of one name (store/sql/
 * unique-violation.ts says how each driver reports it).
 */
import type { Compilable } from 'kysely';
import type { ExecAgentsStore, StoredEvent } from '../../core/store/exec-agents-store.js';
import { toJson } from '../json-column.js';
import { sqlFor } from '../sql/sql-builder.js';
import { first, rows, run, type SqlProgram } from '../sql/sql-program.js';
import type { SqlRunner } from '../sql/sql-runner.js';
import type { TransactionEvents } from '../sql/transaction-events.js';
import { isUniqueViolation } from '../sql/unique-violation.js';
import { AGENT_COLUMNS, JOIN_KEY_COLUMNS, toAgent, toJoinKey } from './exec-agents-rows.js';
import type { ExecAgentsTables } from './exec-agents-tables.js';

export interface ExecAgentsStoreDeps {
  readonly runner: SqlRunner;
  readonly events: TransactionEvents;
}

export function createExecAgentsStore({ runner, events }: ExecAgentsStoreDeps): ExecAgentsStore {
  const { db } = sqlFor<ExecAgentsTables>(runner.dialect);
  const joinKeys = db.selectFrom('exec_join_keys').select(JOIN_KEY_COLUMNS);
  const agents = db.selectFrom('exec_agents').select(AGENT_COLUMNS);
  const oneJoinKey = (query: typeof joinKeys) => runner.read(first(query)).then((r) => (r ? toJoinKey(r) : null));
  const oneAgent = (query: typeof agents) => runner.read(first(query)).then((r) => (r ? toAgent(r) : null));

  /** The guarded write, then (if it changed a row) the events, with the row's project and `at` as their time. */
  function* withEvents(changedRow: Compilable<{ project_id: string }>, stored: readonly StoredEvent[], at: number): SqlProgram<boolean> {
    const row = yield* first(changedRow);
    if (!row) return false;
    for (const e of stored) yield* events.emit(row.project_id, e.type, e.data, at);
    return true;
  }
  const write = (changedRow: Compilable<{ project_id: string }>, stored: readonly StoredEvent[], at: number): Promise<boolean> =>
    runner.write(withEvents(changedRow, stored, at));
  const updateAgent = (id: string) => db.updateTable('exec_agents').where('id', '=', id);

  return {
    async insertJoinKey(r, keyHash, stored) {
      const values = { id: r.id, project_id: r.projectId, name: r.name, key_hash: keyHash, created_at: r.createdAt, revoked_at: null };
      await write(db.insertInto('exec_join_keys').values(values).returning('project_id'), stored, r.createdAt);
    },
    listJoinKeys: (projectId) => runner.read(rows(joinKeys.where('project_id', '=', projectId).orderBy('seq', 'desc'))).then((found) => found.map(toJoinKey)),
    findJoinKey: (projectId, id) => oneJoinKey(joinKeys.where('project_id', '=', projectId).where('id', '=', id)),
    findJoinKeyByHash: (keyHash) => oneJoinKey(joinKeys.where('key_hash', '=', keyHash)),
    revokeJoinKey: (projectId, id, at, stored) =>
      write(
        db.updateTable('exec_join_keys').set({ revoked_at: at }).where('project_id', '=', projectId).where('id', '=', id).where('revoked_at', 'is', null).returning('project_id'),
        stored,
        at,
      ),

    insertAgent(r, keyHash, stored) {
      const values = {
        id: r.id,
        project_id: r.projectId,
        registration_name: r.registrationName,
        description: r.description,
        workspace_ids: toJson(r.workspaceIds),
        key_hash: keyHash,
        join_key_id: r.joinKeyId,
        manifest: toJson(r.manifest),
        manifest_hash: r.manifestHash,
        created_at: r.createdAt,
        enrolled_at: r.enrolledAt,
        last_seen_at: r.lastSeenAt,
        updated_at: r.updatedAt,
        deleted_at: null,
      };
      // DO NOTHING: an enrollment in another process (or replica) took the name a moment ago (live-name index).
      return write(db.insertInto('exec_agents').values(values).onConflict((oc) => oc.doNothing()).returning('project_id'), stored, r.enrolledAt);
    },
    listAgents: (projectId) =>
      runner.read(rows(agents.where('project_id', '=', projectId).where('deleted_at', 'is', null).orderBy('seq'))).then((found) => found.map(toAgent)),
    findAgent: (projectId, id) => oneAgent(agents.where('project_id', '=', projectId).where('id', '=', id)),
    findAgentByHash: (keyHash) => oneAgent(agents.where('key_hash', '=', keyHash)),
    findLiveAgentByName: (projectId, name) => oneAgent(agents.where('project_id', '=', projectId).where('registration_name', '=', name).where('deleted_at', 'is', null)),
    enrolled: (r, stored) =>
      write(
        updateAgent(r.id)
          .set({
            registration_name: r.registrationName,
            manifest: toJson(r.manifest),
            manifest_hash: r.manifestHash,
            enrolled_at: r.enrolledAt,
            last_seen_at: r.lastSeenAt,
            updated_at: r.updatedAt,
          })
          .returning('project_id'),
        stored,
        r.enrolledAt,
        // The live-name index refuses the new name when another live agent holds it: false, rolled back.
      ).catch((err: unknown) => {
        if (isUniqueViolation(err)) return false;
        throw err;
      }),
    async updateAgent(r, stored) {
      await write(updateAgent(r.id).set({ description: r.description, workspace_ids: toJson(r.workspaceIds), updated_at: r.updatedAt }).returning('project_id'), stored, r.updatedAt);
    },
    async setAgentKeyHash(id, keyHash, at, stored) {
      await write(updateAgent(id).set({ key_hash: keyHash, updated_at: at }).returning('project_id'), stored, at);
    },
    softDeleteAgent: (id, at, stored) => write(updateAgent(id).set({ deleted_at: at, updated_at: at }).where('deleted_at', 'is', null).returning('project_id'), stored, at),
    async lastSeen(id, at) {
      await runner.read(run(updateAgent(id).set({ last_seen_at: at }).where('last_seen_at', '<', at)));
    },
  };
}
