/**
 * The router port (core/store/router-store.ts), written once for SQLite and PostgreSQL (issue 33): settings
 * and rules, SLOs, model aliases and a workspace's routing fields, each method a program its backend's
 * runner drives. Every write of settings, rules, SLOs or aliases that changed a row sends the change notice
 * `router` in its transaction (PostgreSQL: every replica's caches reload once it commits); a workspace's
 * routing fields are the catalog's rows and notify 'catalog'. The decision rows are router-decisions.ts's.
 */
import type { Compilable, Kysely } from 'kysely';
import type { StoredSettings } from '../../core/routing/settings.js';
import type { RoutingRule } from '../../core/routing/types.js';
import type { ProjectRouterState, RouterStore, WorkspaceChange } from '../../core/store/router-store.js';
import { fromJson, toJson } from '../json-column.js';
import type { ChangeNotices } from '../sql/change-notices.js';
import { sqlFor } from '../sql/sql-builder.js';
import { first, rows, run, type SqlProgram } from '../sql/sql-program.js';
import type { SqlRunner } from '../sql/sql-runner.js';
import { aliasOf, routerReads, sloOf } from './router-reads.js';
import { createRouterDecisions } from './router-decisions.js';
import type { RouterTables } from './router-tables.js';

export const ROUTER_TOPIC = 'router';
/** Workspaces and projects are the catalog's rows: their replicas reload on its topic. */
const CATALOG_TOPIC = 'catalog';

export type RouterDecisions = Pick<RouterStore, 'insertDecisions' | 'decisions' | 'decisionCounts' | 'decisionOf' | 'pruneDecisions'>;

export interface RouterStoreDeps {
  readonly runner: SqlRunner;
  readonly notices: ChangeNotices;
}

const EMPTY: ProjectRouterState = { settings: {}, rules: [] };
const stateOf = (r: { settings: string; rules: string }): ProjectRouterState => ({ settings: fromJson<StoredSettings>(r.settings), rules: fromJson<RoutingRule[]>(r.rules) });

export function createRouterStore({ runner, notices }: RouterStoreDeps): RouterStore {
  const { db, dialect } = sqlFor<RouterTables>(runner.dialect);
  const reads = routerReads(dialect);

  /** A statement and, when it changed a row, the change notice, committed together. */
  function* notifying<R>(query: Compilable<R>): SqlProgram<R[]> {
    const found = yield* rows(query);
    if (found.length > 0) yield* notices.notify(ROUTER_TOPIC);
    return found;
  }
  /** As `notifying`, for a statement without RETURNING; true when it changed one row. */
  function* changedOne(query: Compilable<unknown>): SqlProgram<boolean> {
    const count = yield* run(query);
    if (count > 0) yield* notices.notify(ROUTER_TOPIC);
    return count === 1;
  }

  function* update(projectId: string, change: (current: ProjectRouterState) => ProjectRouterState, now: number): SqlProgram<ProjectRouterState> {
    // PostgreSQL: the row exists before it is locked, so two first writes of a project serialize too (a
    // refused change rolls the placeholder back with everything else). SQLite's IMMEDIATE transaction
    // holds the file's write lock from its start: processes sharing it never change a stale state.
    if (dialect === 'postgres') yield* run(upsertState(db, projectId, EMPTY, now, 'keep'));
    const select = db.selectFrom('semantic_router_settings').select(['settings', 'rules']).where('project_id', '=', projectId);
    const row = yield* first(dialect === 'postgres' ? select.forUpdate() : select);
    const current = row ? stateOf(row) : EMPTY;
    const next = change(current);
    if (next === current) return current;
    yield* run(upsertState(db, projectId, next, now, 'replace'));
    yield* notices.notify(ROUTER_TOPIC);
    return next;
  }

  return {
    routerStates: async () => new Map((await runner.read(rows(db.selectFrom('semantic_router_settings').select(['project_id', 'settings', 'rules'])))).map((r) => [r.project_id, stateOf(r)])),
    async saveRouterState(projectId, state, now) {
      await runner.write(changedOne(upsertState(db, projectId, state, now, 'replace')));
    },
    updateRouterState: (projectId, change, now) => runner.write(update(projectId, change, now)),
    slos: async (projectId) =>
      (await runner.read(rows(projectId === undefined ? db.selectFrom('endpoint_slos').selectAll().orderBy('created_at').orderBy('project_id').orderBy('endpoint_id') : reads.slos(projectId)))).map(sloOf),
    async putSlo(projectId, endpointId, o, now) {
      const values = { project_id: projectId, endpoint_id: endpointId, ttft_ms: o.ttftMs, tpot_ms: o.tpotMs, created_at: now, updated_at: now };
      const upsert = db
        .insertInto('endpoint_slos')
        .values(values)
        .onConflict((oc) => oc.columns(['project_id', 'endpoint_id']).doUpdateSet((eb) => ({ ttft_ms: eb.ref('excluded.ttft_ms'), tpot_ms: eb.ref('excluded.tpot_ms'), updated_at: eb.ref('excluded.updated_at') })))
        .returningAll();
      const [row] = await runner.write(notifying(upsert));
      if (!row) throw new Error('endpoint_slos: the upsert returned no row');
      return sloOf(row);
    },
    aliases: async (projectId) =>
      (await runner.read(rows(projectId === undefined ? db.selectFrom('model_aliases').selectAll().orderBy('created_at').orderBy('project_id').orderBy('alias') : reads.aliases(projectId)))).map(aliasOf),
    createAlias: (projectId, alias, target, now) =>
      runner.write(changedOne(db.insertInto('model_aliases').values({ project_id: projectId, alias, target, created_at: now, updated_at: now }).onConflict((oc) => oc.doNothing()))),
    updateAlias: (projectId, alias, target, now) =>
      runner.write(changedOne(db.updateTable('model_aliases').set({ target, updated_at: now }).where('project_id', '=', projectId).where('alias', '=', alias))),
    deleteAlias: (projectId, alias) => runner.write(changedOne(db.deleteFrom('model_aliases').where('project_id', '=', projectId).where('alias', '=', alias))),
    applyWorkspaceChange: (projectId, workspaceId, change, now) => runner.write(workspaceChange(db, notices, projectId, workspaceId, change, now)),
    ...createRouterDecisions(runner),
    onChange: (fn) => notices.watch(ROUTER_TOPIC, fn),
  };
}

/** `keep`: insert only when the project has no row; `replace`: insert or replace its state. */
function upsertState(db: Kysely<RouterTables>, projectId: string, state: ProjectRouterState, now: number, existing: 'keep' | 'replace') {
  return db
    .insertInto('semantic_router_settings')
    .values({ project_id: projectId, settings: toJson(state.settings), rules: toJson(state.rules), updated_at: now })
    .onConflict((oc) =>
      existing === 'keep'
        ? oc.column('project_id').doNothing()
        : oc.column('project_id').doUpdateSet((eb) => ({ settings: eb.ref('excluded.settings'), rules: eb.ref('excluded.rules'), updated_at: eb.ref('excluded.updated_at') })),
    );
}

/** Each field stamped `*_set_at` (config sync then leaves it alone), in one transaction. */
function* workspaceChange(db: Kysely<RouterTables>, notices: ChangeNotices, projectId: string, workspaceId: string, change: WorkspaceChange, now: number): SqlProgram<void> {
  const workspace = db.updateTable('workspaces').where('project_id', '=', projectId).where('id', '=', workspaceId);
  if (change.routingMode !== undefined) yield* run(workspace.set({ routing_mode: change.routingMode, routing_mode_set_at: now }));
  if (change.pinnedEndpointId !== undefined) yield* run(workspace.set({ pinned_endpoint_id: change.pinnedEndpointId }));
  const project = db.updateTable('projects').where('id', '=', projectId);
  if (change.isDefault === true) yield* run(project.set({ default_workspace_id: workspaceId, default_workspace_set_at: now, updated_at: now }));
  if (change.isDefault === false) yield* run(project.set({ default_workspace_id: null, default_workspace_set_at: now, updated_at: now }).where('default_workspace_id', '=', workspaceId));
  yield* notices.notify(CATALOG_TOPIC);
}
