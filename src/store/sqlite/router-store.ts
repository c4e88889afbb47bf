/**
 * The router's storage port (core/store/router-store.ts) over the instance's SQLite file: the synchronous
 * repos underneath, answered as settled promises. In the embedded mode the request path does not go
 * through here: it reads the repos directly (they are synchronous and local), and decision rows are
 * written by the store's writer thread (store/decision-log.ts); this port serves the management writes
 * and the reads the caches and the contract suite make.
 */
import type { StoredSettings } from '../../core/routing/settings.js';
import type { RoutingRule } from '../../core/routing/types.js';
import type { ProjectRouterState, RouterStore, StoredDecision } from '../../core/store/router-store.js';
import { writeTransaction, type Db } from '../db.js';
import { fromJson, toJson } from '../json-column.js';
import { createModelAliasesRepo } from '../model-aliases-repo.js';
import { createRouterSettingsRepo } from '../router-settings-repo.js';
import { createSlosRepo } from '../slos-repo.js';
import { createWorkspaceRoutingRepo } from '../workspace-routing-repo.js';
import { aliasOf, decisionOf, sloOf, type AliasRow, type DecisionRow, type SloRow } from '../router-rows.js';

export function createSqliteRouterStore(db: Db): RouterStore {
  const settings = createRouterSettingsRepo(db);
  const slos = createSlosRepo(db);
  const aliases = createModelAliasesRepo(db);
  const workspaces = createWorkspaceRoutingRepo(db);
  const allStates = db.prepare<[], { project_id: string; settings: string; rules: string }>('SELECT project_id, settings, rules FROM semantic_router_settings');
  const oneState = db.prepare<[string], { settings: string; rules: string }>('SELECT settings, rules FROM semantic_router_settings WHERE project_id = ?');
  // IMMEDIATE: processes sharing the file take the write lock before reading, so none changes a stale state.
  const updateState = writeTransaction(db, (projectId: string, change: (current: ProjectRouterState) => ProjectRouterState, now: number): ProjectRouterState => {
    const row = oneState.get(projectId);
    const current: ProjectRouterState = row ? { settings: fromJson<StoredSettings>(row.settings), rules: fromJson<RoutingRule[]>(row.rules) } : { settings: {}, rules: [] };
    const next = change(current);
    if (next !== current) settings.save(projectId, next, now);
    return next;
  });
  const allSlos = db.prepare<[], SloRow>('SELECT * FROM endpoint_slos ORDER BY created_at, project_id, endpoint_id');
  const allAliases = db.prepare<[], AliasRow>('SELECT * FROM model_aliases ORDER BY created_at, project_id, alias');
  const insertDecision = db.prepare(`
    INSERT INTO routing_decisions (request_id, project_id, workspace_id, created_at, route_reason, query_preview, detail)
    VALUES (?, ?, ?, ?, ?, ?, ?)`);
  const insertDecisions = writeTransaction(db, (rows: readonly StoredDecision[]) => {
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
    async routerStates() {
      return new Map<string, ProjectRouterState>(
        allStates.all().map((r) => [r.project_id, { settings: fromJson<StoredSettings>(r.settings), rules: fromJson<RoutingRule[]>(r.rules) }]),
      );
    },
    async saveRouterState(projectId, state, now) {
      settings.save(projectId, state, now);
    },
    updateRouterState: async (projectId, change, now) => updateState(projectId, change, now),
    async slos(projectId) {
      return projectId === undefined ? allSlos.all().map(sloOf) : slos.list(projectId);
    },
    async putSlo(projectId, endpointId, objectives, now) {
      return slos.put(projectId, endpointId, objectives, now);
    },
    async aliases(projectId) {
      return projectId === undefined ? allAliases.all().map(aliasOf) : aliases.list(projectId);
    },
    createAlias: async (projectId, alias, target, now) => aliases.create(projectId, alias, target, now),
    updateAlias: async (projectId, alias, target, now) => aliases.update(projectId, alias, target, now),
    deleteAlias: async (projectId, alias) => aliases.delete(projectId, alias),
    async applyWorkspaceChange(projectId, workspaceId, change, now) {
      workspaces.apply(projectId, workspaceId, change, now);
    },
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
    onChange: () => () => undefined,
  };
}
