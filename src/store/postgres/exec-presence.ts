/**
 * Which replica holds which agent's socket (core/store/exec-agents-store.ts ExecPresence), in
 * `exec_agent_presence` (migrations/009-exec.ts), with change notices: `exec.presence` when agents come
 * or leave, `exec.wake:<instance>` to ask one replica to dispatch the queued invocations its agents serve.
 */
import type { ExecTool } from '../../core/exec/agent-registry.js';
import type { ExecPresence, PresentAgent } from '../../core/store/exec-agents-store.js';
import type { PgStore } from './pg-store.js';

const PRESENCE_TOPIC = 'exec.presence';
const wakeTopic = (instanceId: string): string => `exec.wake:${instanceId}`;

interface PresenceRow {
  agent_id: string;
  project_id: string;
  instance_id: string;
  registration_name: string;
  workspace_ids: string;
  tools: string;
  since: number;
}

export function createPgExecPresence(store: PgStore, instanceId: string): ExecPresence {
  const { pool } = store;
  const changed = (): Promise<void> => store.notifyChange(pool, PRESENCE_TOPIC);
  return {
    async attach(a) {
      await pool.query(
        `INSERT INTO exec_agent_presence (agent_id, project_id, instance_id, registration_name, workspace_ids, tools, since) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (agent_id) DO UPDATE SET project_id = excluded.project_id, instance_id = excluded.instance_id, registration_name = excluded.registration_name,
           workspace_ids = excluded.workspace_ids, tools = excluded.tools, since = excluded.since`,
        [a.id, a.projectId, instanceId, a.registrationName, JSON.stringify(a.workspaceIds), JSON.stringify(a.tools), a.since],
      );
      await changed();
    },
    async detach(agentId) {
      const { rowCount } = await pool.query('DELETE FROM exec_agent_presence WHERE agent_id = $1 AND instance_id = $2', [agentId, instanceId]);
      if (rowCount) await changed();
    },
    async setWorkspaces(agentId, workspaceIds) {
      const { rowCount } = await pool.query('UPDATE exec_agent_presence SET workspace_ids = $3 WHERE agent_id = $1 AND instance_id = $2', [agentId, instanceId, JSON.stringify(workspaceIds)]);
      if (rowCount) await changed();
    },
    async elsewhere() {
      const { rows } = await pool.query<PresenceRow>(
        `SELECT p.* FROM exec_agent_presence p JOIN gateway_instances i ON i.id = p.instance_id WHERE p.instance_id <> $1 ORDER BY p.since`,
        [instanceId],
      );
      return rows.map(
        (r): PresentAgent => ({
          id: r.agent_id,
          projectId: r.project_id,
          registrationName: r.registration_name,
          workspaceIds: JSON.parse(r.workspace_ids) as string[],
          tools: JSON.parse(r.tools) as ExecTool[],
          instanceId: r.instance_id,
          since: r.since,
        }),
      );
    },
    onChange: (fn) => store.onChange(PRESENCE_TOPIC, fn),
    wake: (target) => store.notifyChange(pool, wakeTopic(target)),
    onWake: (fn) => store.onChange(wakeTopic(instanceId), fn),
    changed: (agentId, what) => store.notifyChange(pool, `exec.agent.${what}:${agentId}`),
    onChanged: (agentId, what, fn) => store.onChange(`exec.agent.${what}:${agentId}`, fn),
  };
}
