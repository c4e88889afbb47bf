/**
 * The routing decision rows of the router port in the instance's SQLite file: the part of the port not yet
 * written once (store/router/router-store.ts says why). In the embedded mode the request path writes
 * decisions through the store's writer thread (store/decision-log.ts); these serve the reads and the
 * contract suite.
 */
import type { RouterDecisions } from '../router/router-store.js';
import { writeTransaction, type Db } from '../db.js';
import { decisionOf, type DecisionRow } from '../router-rows.js';

export function createSqliteRouterDecisions(db: Db): RouterDecisions {
  const insertDecision = db.prepare(`
    INSERT INTO routing_decisions (request_id, project_id, workspace_id, created_at, route_reason, query_preview, detail)
    VALUES (?, ?, ?, ?, ?, ?, ?)`);
  const insertDecisions = writeTransaction(db, (rows: Parameters<RouterDecisions['insertDecisions']>[0]) => {
    for (const r of rows) insertDecision.run(r.requestId, r.projectId, r.workspaceId, r.createdAt, r.routeReason, r.sealedPreview, JSON.stringify(r.detail));
  });
  const listDecisions = db.prepare<[string, number, number], DecisionRow>(`
    SELECT * FROM routing_decisions WHERE project_id = ? AND created_at >= ? ORDER BY created_at DESC, rowid DESC LIMIT ?`);
  const counts = db.prepare<[string, number], { route_reason: string; n: number }>(
    'SELECT route_reason, COUNT(*) AS n FROM routing_decisions WHERE project_id = ? AND created_at >= ? GROUP BY route_reason',
  );
  const prune = db.prepare('DELETE FROM routing_decisions WHERE created_at < ?');
  const oneDecision = db.prepare<[string, number, number, string], DecisionRow>(`
    SELECT * FROM routing_decisions WHERE project_id = ? AND created_at >= ? AND created_at <= ? AND request_id = ? ORDER BY rowid LIMIT 1`);

  return {
    async insertDecisions(rows) {
      insertDecisions(rows);
    },
    async decisions(projectId, since, limit) {
      return listDecisions.all(projectId, since, limit).map(decisionOf);
    },
    async decisionOf(projectId, requestId, from, to) {
      const row = oneDecision.get(projectId, from, to, requestId);
      return row ? decisionOf(row) : null;
    },
    async decisionCounts(projectId, since) {
      return new Map(counts.all(projectId, since).map((r) => [r.route_reason, r.n]));
    },
    async pruneDecisions(before) {
      prune.run(before);
    },
  };
}
