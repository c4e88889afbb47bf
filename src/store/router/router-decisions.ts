/**
 * The routing decision rows of the router port, written once for SQLite and PostgreSQL (issue 33). They
 * are telemetry: inserted in batches, read newest first, pruned by age, no change notice. Listed in
 * insertion order within a millisecond, which each backend keeps its own way (router-tables.ts): SQLite's
 * rowid, PostgreSQL's `seq`. In the embedded mode the request path writes decisions through the store's
 * writer thread (store/decision-log.ts); on SQLite these serve the reads and the contract suite.
 */
import { sql, type Kysely } from 'kysely';
import type { StoredDecision } from '../../core/store/router-store.js';
import { decisionOf } from '../router-rows.js';
import { LIMIT_ONE, sqlFor } from '../sql/sql-builder.js';
import { first, rows, run, type SqlProgram } from '../sql/sql-program.js';
import type { SqlRunner } from '../sql/sql-runner.js';
import type { RouterDecisions } from './router-store.js';
import type { RouterTables } from './router-tables.js';

/** Rows per INSERT: 7 parameters each, under SQLite's 32,766 and PostgreSQL's 65,535 a statement. */
const DECISIONS_PER_INSERT = 4000;
const COLUMNS = ['request_id', 'project_id', 'workspace_id', 'created_at', 'route_reason', 'query_preview', 'detail'] as const;

export function createRouterDecisions(runner: SqlRunner): RouterDecisions {
  const { db, dialect } = sqlFor<RouterTables>(runner.dialect);
  const inserted = sql.ref<number>(dialect === 'postgres' ? 'seq' : 'rowid');
  const decisions = (d: Kysely<RouterTables>) => d.selectFrom('routing_decisions').select(COLUMNS);

  function* insert(all: readonly StoredDecision[]): SqlProgram<void> {
    for (let start = 0; start < all.length; start += DECISIONS_PER_INSERT) {
      const values = all.slice(start, start + DECISIONS_PER_INSERT).map((r) => ({
        request_id: r.requestId,
        project_id: r.projectId,
        workspace_id: r.workspaceId,
        created_at: r.createdAt,
        route_reason: r.routeReason,
        query_preview: r.sealedPreview,
        detail: JSON.stringify(r.detail),
      }));
      yield* run(db.insertInto('routing_decisions').values(values));
    }
  }

  return {
    insertDecisions: async (all) => (all.length === 0 ? undefined : runner.write(insert(all))),
    decisions: async (projectId, since, limit) =>
      (await runner.read(rows(decisions(db).where('project_id', '=', projectId).where('created_at', '>=', since).orderBy('created_at', 'desc').orderBy(inserted, 'desc').limit(limit)))).map(decisionOf),
    async decisionOf(projectId, requestId, from, to) {
      const row = await runner.read(
        first(decisions(db).where('project_id', '=', projectId).where('created_at', '>=', from).where('created_at', '<=', to).where('request_id', '=', requestId).orderBy(inserted).limit(LIMIT_ONE)),
      );
      return row ? decisionOf(row) : null;
    },
    async decisionCounts(projectId, since) {
      const counted = db
        .selectFrom('routing_decisions')
        .select(['route_reason', sql<number>`COUNT(*)`.as('n')])
        .where('project_id', '=', projectId)
        .where('created_at', '>=', since)
        .groupBy('route_reason');
      return new Map((await runner.read(rows(counted))).map((r) => [r.route_reason, Number(r.n)]));
    },
    pruneDecisions: async (before) => void (await runner.write(run(db.deleteFrom('routing_decisions').where('created_at', '<', before)))),
  };
}
