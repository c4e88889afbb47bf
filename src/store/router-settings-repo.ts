/**
 * Semantic-router settings and rules per project in SQLite (one row each, JSON columns read and written
 * whole), under the router store port (store/sqlite/router-store.ts). The request path reads them from
 * router/router-state.ts's cache, which a bus invalidation (src/coordination/bus-wiring.ts) or a
 * PostgreSQL change notice reloads; this repo's own copy serves `get` for its direct users.
 */
import type { StoredSettings } from '../core/routing/settings.js';
import type { RoutingRule } from '../core/routing/types.js';
import type { ProjectRouterState } from '../core/store/router-store.js';
import type { Db } from './db.js';
import { fromJson, toJson } from './json-column.js';

export type { ProjectRouterState };

export interface RouterSettingsRepo {
  get(projectId: string): ProjectRouterState;
  save(projectId: string, state: ProjectRouterState, now: number): void;
  /** Reads every project's row again (another process wrote). */
  reload(): void;
}

interface Row {
  project_id: string;
  settings: string;
  rules: string;
}

const EMPTY: ProjectRouterState = { settings: {}, rules: [] };

export function createRouterSettingsRepo(db: Db): RouterSettingsRepo {
  const upsert = db.prepare(`
    INSERT INTO semantic_router_settings (project_id, settings, rules, updated_at) VALUES (@projectId, @settings, @rules, @now)
    ON CONFLICT (project_id) DO UPDATE SET settings = excluded.settings, rules = excluded.rules, updated_at = excluded.updated_at`);
  const selectAll = db.prepare<[], Row>('SELECT project_id, settings, rules FROM semantic_router_settings');
  let cache = new Map<string, ProjectRouterState>();
  const reload = (): void => {
    const next = new Map<string, ProjectRouterState>();
    for (const row of selectAll.all()) next.set(row.project_id, { settings: fromJson<StoredSettings>(row.settings), rules: fromJson<RoutingRule[]>(row.rules) });
    cache = next;
  };
  reload();
  return {
    reload,
    get: (projectId) => cache.get(projectId) ?? EMPTY,
    save(projectId, state, now) {
      upsert.run({ projectId, settings: toJson(state.settings), rules: toJson(state.rules), now });
      cache.set(projectId, state);
    },
  };
}
