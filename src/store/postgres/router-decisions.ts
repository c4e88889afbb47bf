/**
 * The routing decision rows of the router port in PostgreSQL, shared by every replica: the part of the
 * port not yet written once (store/router/router-store.ts says why). Decision rows are telemetry:
 * inserted in batches, no change notice.
 */
import type { RouterDecisions } from '../router/router-store.js';
import { decisionOf, type DecisionRow } from '../router-rows.js';
import type { PgStore } from './pg-store.js';

/** Columns of one decision row in the batch INSERT; PostgreSQL allows 65,535 parameters per statement. */
const DECISION_COLUMNS = 7;
const DECISIONS_PER_INSERT = Math.floor(65_535 / DECISION_COLUMNS);

export function createPgRouterDecisions(store: PgStore): RouterDecisions {
  const { pool } = store;
  return {
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
  };
}
