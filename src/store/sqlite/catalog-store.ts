/**
 * The catalog port over this instance's SQLite file: the synchronous repos (keys-repo, projects-repo,
 * endpoints-repo) and config-sync, answered as settled promises. Credentials are not preloaded
 * (`credentials: null`): the in-memory catalog asks per key and caches hits, as it always has.
 */
import type { CatalogStore } from '../../core/store/catalog-store.js';
import { syncConfig } from '../config-sync.js';
import type { Db } from '../db.js';
import { createEndpointsRepo } from '../endpoints-repo.js';
import { createKeysRepo } from '../keys-repo.js';
import { createProjectsRepo } from '../projects-repo.js';

export function createSqliteCatalogStore(db: Db): CatalogStore {
  const keys = createKeysRepo(db);
  const projects = createProjectsRepo(db);
  const endpoints = createEndpointsRepo(db);
  return {
    syncConfig: async (config, now) => syncConfig(db, config, now),
    loadSnapshot: async () => ({ projects: projects.listProjects(), workspaces: projects.listWorkspaces(), endpoints: endpoints.listLive(), credentials: null }),
    findCredential: async (hash) => keys.findCredential(hash),
    listForProject: async (projectId) => keys.listForProject(projectId),
    findInProject: async (projectId, id) => keys.findInProject(projectId, id),
    rotatedValuesValidUntil: async (projectId) => keys.rotatedValuesValidUntil(projectId),
    insert: async (key, hash) => keys.insert(key, hash),
    revoke: async (id, now, reason) => keys.revoke(id, now, reason),
    rotate: async (id, newHash, newPrefix, now, graceUntil, scopes) => keys.rotateIfActive(id, newHash, newPrefix, now, graceUntil, scopes ?? null),
    // The database belongs to whoever opened it.
    close: async () => undefined,
  };
}
