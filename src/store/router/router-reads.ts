/**
 * The router reads made on the request path (SQLite, where router/router-state.ts reads SLOs and aliases
 * from the file on each use so processes sharing it agree): prepared (sql/sql-program.ts), and used by
 * the store's own methods too, so each is defined once.
 */
import type { EndpointSlo, ModelAlias } from '../../core/store/router-store.js';
import { sqlFor } from '../sql/sql-builder.js';
import { prepared, type SqlDialect } from '../sql/sql-program.js';
import type { RouterTables } from './router-tables.js';

export type SloRow = RouterTables['endpoint_slos'];
export type AliasRow = RouterTables['model_aliases'];

export function routerReads(dialect: SqlDialect) {
  const { db } = sqlFor<RouterTables>(dialect);
  return {
    /** The project's objectives, oldest first. */
    slos: prepared((projectId: string) => db.selectFrom('endpoint_slos').selectAll().where('project_id', '=', projectId).orderBy('created_at').orderBy('endpoint_id')),
    /** The project's aliases, oldest first. */
    aliases: prepared((projectId: string) => db.selectFrom('model_aliases').selectAll().where('project_id', '=', projectId).orderBy('created_at').orderBy('alias')),
    alias: prepared((projectId: string, alias: string) => db.selectFrom('model_aliases').selectAll().where('project_id', '=', projectId).where('alias', '=', alias)),
  };
}

export const sloOf = (r: SloRow): EndpointSlo => ({
  projectId: r.project_id,
  endpointId: r.endpoint_id,
  ttftMs: r.ttft_ms,
  tpotMs: r.tpot_ms,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export const aliasOf = (r: AliasRow): ModelAlias => ({ projectId: r.project_id, alias: r.alias, target: r.target, createdAt: r.created_at, updatedAt: r.updated_at });
