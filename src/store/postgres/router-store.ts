/**
 * The router's storage port (core/store/router-store.ts) in PostgreSQL, shared by every replica. Each write
 * of settings, rules, SLOs or aliases notifies the topic `router` in its transaction, so every replica's
 * caches reload once it commits. A workspace's routing fields live in the catalog's tables (001-catalog)
 * and notify 'catalog'. Decision rows are telemetry: inserted in batches, no notice.
 */
import type { StoredSettings } from '../../core/routing/settings.js';
import type { RoutingRule } from '../../core/routing/types.js';
import type { ProjectRouterState, RouterStore } from '../../core/store/router-store.js';
import { fromJson, toJson } from '../json-column.js';
import { aliasOf, decisionOf, sloOf, type AliasRow, type DecisionRow, type SloRow } from '../router-rows.js';
import type { PgStore } from './pg-store.js';

export const ROUTER_TOPIC = 'router';
/** Workspaces and projects are the catalog's rows: their replicas reload on its topic. */
const CATALOG_TOPIC = 'catalog';
/** Columns of one decision row in the batch INSERT; PostgreSQL allows 65,535 parameters per statement. */
const DECISION_COLUMNS = 7;
const DECISIONS_PER_INSERT = Math.floor(65_535 / DECISION_COLUMNS);

export function createPgRouterStore(store: PgStore): RouterStore {
  const { pool } = store;

  /** One statement and the change notice, committed together; returns the statement's rows and count. */
  async function write<R extends object>(sql: string, params: unknown[]): Promise<{ rows: R[]; rowCount: number }> {
    return store.transaction(async (client) => {
      const result = await client.query<R>(sql, params);
      if ((result.rowCount ?? 0) > 0) await store.notifyChange(client, ROUTER_TOPIC);
      return { rows: result.rows, rowCount: result.rowCount ?? 0 };
    });
  }

  return {
    async routerStates() {
      const { rows } = await pool.query<{ project_id: string; settings: string; rules: string }>('SELECT project_id, settings, rules FROM semantic_router_settings');
      return new Map<string, ProjectRouterState>(
        rows.map((r) => [r.project_id, { settings: fromJson<StoredSettings>(r.settings), rules: fromJson<RoutingRule[]>(r.rules) }]),
      );
    },
    updateRouterState: (projectId, change, now) =>
      store.transaction(async (client) => {
        // The row exists before it is locked, so two first writes of a project serialize too (a refused
        // change rolls the placeholder back with everything else).
        await client.query(`INSERT INTO semantic_router_settings (project_id, settings, rules, updated_at) VALUES ($1, '{}', '[]', $2) ON CONFLICT (project_id) DO NOTHING`, [projectId, now]);
        const { rows } = await client.query<{ settings: string; rules: string }>('SELECT settings, rules FROM semantic_router_settings WHERE project_id = $1 FOR UPDATE', [projectId]);
        const row = rows[0];
        const current: ProjectRouterState = row ? { settings: fromJson<StoredSettings>(row.settings), rules: fromJson<RoutingRule[]>(row.rules) } : { settings: {}, rules: [] };
        const next = change(current);
        if (next === current) return current;
        await client.query('UPDATE semantic_router_settings SET settings = $2, rules = $3, updated_at = $4 WHERE project_id = $1', [projectId, toJson(next.settings), toJson(next.rules), now]);
        await store.notifyChange(client, ROUTER_TOPIC);
        return next;
      }),
    async saveRouterState(projectId, state, now) {
      await write(
        `INSERT INTO semantic_router_settings (project_id, settings, rules, updated_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (project_id) DO UPDATE SET settings = excluded.settings, rules = excluded.rules, updated_at = excluded.updated_at`,
        [projectId, toJson(state.settings), toJson(state.rules), now],
      );
    },
    async slos(projectId) {
      const { rows } =
        projectId === undefined
          ? await pool.query<SloRow>('SELECT * FROM endpoint_slos ORDER BY created_at, project_id, endpoint_id')
          : await pool.query<SloRow>('SELECT * FROM endpoint_slos WHERE project_id = $1 ORDER BY created_at, endpoint_id', [projectId]);
      return rows.map(sloOf);
    },
    async putSlo(projectId, endpointId, o, now) {
      const { rows } = await write<SloRow>(
        `INSERT INTO endpoint_slos (project_id, endpoint_id, ttft_ms, tpot_ms, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
         ON CONFLICT (project_id, endpoint_id) DO UPDATE SET ttft_ms = excluded.ttft_ms, tpot_ms = excluded.tpot_ms, updated_at = excluded.updated_at
         RETURNING *`,
        [projectId, endpointId, o.ttftMs, o.tpotMs, now],
      );
      const row = rows[0];
      if (!row) throw new Error('endpoint_slos: the upsert returned no row');
      return sloOf(row);
    },
    async aliases(projectId) {
      const { rows } =
        projectId === undefined
          ? await pool.query<AliasRow>('SELECT * FROM model_aliases ORDER BY created_at, project_id, alias')
          : await pool.query<AliasRow>('SELECT * FROM model_aliases WHERE project_id = $1 ORDER BY created_at, alias', [projectId]);
      return rows.map(aliasOf);
    },
    async createAlias(projectId, alias, target, now) {
      const sql = 'INSERT INTO model_aliases (project_id, alias, target, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) ON CONFLICT DO NOTHING';
      return (await write(sql, [projectId, alias, target, now])).rowCount === 1;
    },
    async updateAlias(projectId, alias, target, now) {
      const sql = 'UPDATE model_aliases SET target = $1, updated_at = $2 WHERE project_id = $3 AND alias = $4';
      return (await write(sql, [target, now, projectId, alias])).rowCount === 1;
    },
    async deleteAlias(projectId, alias) {
      return (await write('DELETE FROM model_aliases WHERE project_id = $1 AND alias = $2', [projectId, alias])).rowCount === 1;
    },
    async applyWorkspaceChange(projectId, workspaceId, change, now) {
      await store.transaction(async (client) => {
        if (change.routingMode !== undefined) {
          await client.query('UPDATE workspaces SET routing_mode = $1, routing_mode_set_at = $2 WHERE project_id = $3 AND id = $4', [change.routingMode, now, projectId, workspaceId]);
        }
        if (change.pinnedEndpointId !== undefined) {
          await client.query('UPDATE workspaces SET pinned_endpoint_id = $1 WHERE project_id = $2 AND id = $3', [change.pinnedEndpointId, projectId, workspaceId]);
        }
        if (change.isDefault === true) {
          await client.query('UPDATE projects SET default_workspace_id = $1, default_workspace_set_at = $2, updated_at = $2 WHERE id = $3', [workspaceId, now, projectId]);
        }
        if (change.isDefault === false) {
          await client.query(
            'UPDATE projects SET default_workspace_id = NULL, default_workspace_set_at = $1, updated_at = $1 WHERE id = $2 AND default_workspace_id = $3',
            [now, projectId, workspaceId],
          );
        }
        await store.notifyChange(client, CATALOG_TOPIC);
      });
    },
    async insertDecisions(rows) {
      if (rows.length === 0) return;
      await store.transaction(async (client) => {
        for (let start = 0; start < rows.length; start += DECISIONS_PER_INSERT) {
          const slice = rows.slice(start, start + DECISIONS_PER_INSERT);
          const params: unknown[] = [];
          const tuples = slice.map((r) => {
            const at = params.length;
            params.push(r.requestId, r.projectId, r.workspaceId, r.createdAt, r.routeReason, r.sealedPreview, JSON.stringify(r.detail));
            return `(${Array.from({ length: DECISION_COLUMNS }, (_, i) => `$${at + i + 1}`).join(', ')})`;
          });
          await client.query(
            `INSERT INTO routing_decisions (request_id, project_id, workspace_id, created_at, route_reason, query_preview, detail) VALUES ${tuples.join(', ')}`,
            params,
          );
        }
      });
    },
    async decisions(projectId, since, limit) {
      const { rows } = await pool.query<DecisionRow>(
        `SELECT request_id, project_id, workspace_id, created_at, route_reason, query_preview, detail FROM routing_decisions
         WHERE project_id = $1 AND created_at >= $2 ORDER BY created_at DESC, seq DESC LIMIT $3`,
        [projectId, since, limit],
      );
      return rows.map(decisionOf);
    },
    async decisionOf(projectId, requestId, from, to) {
      const { rows } = await pool.query<DecisionRow>(
        `SELECT request_id, project_id, workspace_id, created_at, route_reason, query_preview, detail FROM routing_decisions
         WHERE project_id = $1 AND created_at >= $2 AND created_at <= $3 AND request_id = $4 ORDER BY seq LIMIT 1`,
        [projectId, from, to, requestId],
      );
      return rows[0] ? decisionOf(rows[0]) : null;
    },
    async decisionCounts(projectId, since) {
      const { rows } = await pool.query<{ route_reason: string; n: number }>(
        'SELECT route_reason, COUNT(*)::bigint AS n FROM routing_decisions WHERE project_id = $1 AND created_at >= $2 GROUP BY route_reason',
        [projectId, since],
      );
      return new Map(rows.map((r) => [r.route_reason, r.n]));
    },
    async pruneDecisions(before) {
      await pool.query('DELETE FROM routing_decisions WHERE created_at < $1', [before]);
    },
    onChange: (fn) => store.onChange(ROUTER_TOPIC, fn),
  };
}
