/**
 * Project model aliases (the Models API, issue 14). Read on every model-addressed request that names an
 * unknown id, so lookups are one primary-key SELECT; no cache, so every gateway process sharing the file
 * sees a write at once.
 */
import type { ModelAlias } from '../core/store/router-store.js';
import type { Db } from './db.js';
import { aliasOf, type AliasRow } from './router-rows.js';

export type { ModelAlias };

export interface ModelAliasesRepo {
  get(projectId: string, alias: string): ModelAlias | null;
  list(projectId: string): ModelAlias[];
  /** false when the alias already exists. */
  create(projectId: string, alias: string, target: string, now: number): boolean;
  /** false when there is no such alias. */
  update(projectId: string, alias: string, target: string, now: number): boolean;
  delete(projectId: string, alias: string): boolean;
}

export function createModelAliasesRepo(db: Db): ModelAliasesRepo {
  const one = db.prepare<[string, string], AliasRow>('SELECT * FROM model_aliases WHERE project_id = ? AND alias = ?');
  const all = db.prepare<[string], AliasRow>('SELECT * FROM model_aliases WHERE project_id = ? ORDER BY created_at, alias');
  const insert = db.prepare('INSERT INTO model_aliases (project_id, alias, target, created_at, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING');
  const update = db.prepare('UPDATE model_aliases SET target = ?, updated_at = ? WHERE project_id = ? AND alias = ?');
  const remove = db.prepare('DELETE FROM model_aliases WHERE project_id = ? AND alias = ?');
  return {
    get: (projectId, alias) => {
      const row = one.get(projectId, alias);
      return row ? aliasOf(row) : null;
    },
    list: (projectId) => all.all(projectId).map(aliasOf),
    create: (projectId, alias, target, now) => insert.run(projectId, alias, target, now, now).changes === 1,
    update: (projectId, alias, target, now) => update.run(target, now, projectId, alias).changes === 1,
    delete: (projectId, alias) => remove.run(projectId, alias).changes === 1,
  };
}
