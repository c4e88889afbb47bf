/**
 * In-memory snapshot of projects, workspaces, endpoints and key credentials, so that a request does no
 * SQL on the fast path. In-process writers call `reload()`; writes by another process (the CLI minting a
 * key while the gateway runs) are noticed through SQLite's data_version, polled once a second.
 */
import type { KeyLookup } from '../core/auth/authenticate.js';
import type { EndpointRecord, KeyCredential, ProjectRecord, WorkspaceRecord } from '../core/records.js';
import { dataVersion, type Db } from './db.js';
import { createEndpointsRepo } from './endpoints-repo.js';
import { createKeysRepo } from './keys-repo.js';
import { createProjectsRepo } from './projects-repo.js';

export interface Catalog extends KeyLookup {
  /** By external id (`proj_...`) or UUID. */
  project(ref: string): ProjectRecord | null;
  workspaces(projectId: string): ReadonlyMap<string, WorkspaceRecord>;
  endpoint(projectId: string, slug: string): EndpointRecord | null;
  endpoints(projectId: string): readonly EndpointRecord[];
  reload(): void;
  close(): void;
}

const EMPTY_WORKSPACES: ReadonlyMap<string, WorkspaceRecord> = new Map();

export function createCatalog(db: Db, pollMs = 1000): Catalog {
  const projectsRepo = createProjectsRepo(db);
  const endpointsRepo = createEndpointsRepo(db);
  const keysRepo = createKeysRepo(db);

  let projects = new Map<string, ProjectRecord>();
  let workspaces = new Map<string, Map<string, WorkspaceRecord>>();
  let endpoints = new Map<string, EndpointRecord[]>();
  // By project, then slug: a lookup per request on the strings it already holds, no key built.
  let endpointBySlug = new Map<string, Map<string, EndpointRecord>>();
  // Only hits are cached: caching misses would let a stream of random keys grow memory without bound.
  let credentials = new Map<string, KeyCredential>();
  let seenVersion = dataVersion(db);

  function reload(): void {
    projects = new Map();
    for (const p of projectsRepo.listProjects()) {
      projects.set(p.id, p);
      projects.set(p.uuid, p);
    }
    workspaces = new Map();
    for (const w of projectsRepo.listWorkspaces()) {
      const m = workspaces.get(w.projectId) ?? new Map<string, WorkspaceRecord>();
      m.set(w.id, w);
      workspaces.set(w.projectId, m);
    }
    endpoints = new Map();
    endpointBySlug = new Map();
    for (const e of endpointsRepo.listLive()) {
      endpoints.set(e.projectId, [...(endpoints.get(e.projectId) ?? []), e]);
      let bySlug = endpointBySlug.get(e.projectId);
      if (!bySlug) endpointBySlug.set(e.projectId, (bySlug = new Map()));
      bySlug.set(e.slug, e);
    }
    credentials = new Map();
    seenVersion = dataVersion(db);
  }

  const timer = setInterval(() => {
    if (dataVersion(db) !== seenVersion) reload();
  }, pollMs);
  timer.unref();
  reload();

  return {
    project: (ref) => projects.get(ref) ?? null,
    workspaces: (projectId) => workspaces.get(projectId) ?? EMPTY_WORKSPACES,
    endpoint: (projectId, slug) => endpointBySlug.get(projectId)?.get(slug) ?? null,
    endpoints: (projectId) => endpoints.get(projectId) ?? [],
    findCredential(hash) {
      const cached = credentials.get(hash);
      if (cached) return cached;
      const found = keysRepo.findCredential(hash);
      if (found) credentials.set(hash, found);
      return found;
    },
    reload,
    close: () => clearInterval(timer),
  };
}
