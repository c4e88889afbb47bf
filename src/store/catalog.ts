/**
 * In-memory snapshot of projects, workspaces, endpoints and key credentials, so that a request does no
 * SQL on the fast path.
 *
 * SQLite (`createCatalog`): in-process writers call `reload()`; writes by another process (the CLI minting
 * a key while the gateway runs) are noticed through SQLite's data_version, polled once a second; a key is
 * read on its first use and the hit cached.
 *
 * PostgreSQL (`createPreloadedCatalog`, issue 12): the snapshot holds every credential, so a known key never
 * queries PostgreSQL; it is read again whenever any replica notifies 'catalog'. `reload()` is asynchronous
 * there: a writer awaits it, so its next request sees its write. A notice arrives a moment after another
 * replica's commit (0-130 ms, measured from outside), so a key this snapshot does not hold is asked of the
 * store once before its 401 (`lookupMissed`, at most MAX_MISS_LOOKUPS at once).
 */
import type { KeyLookup } from '../core/auth/authenticate.js';
import type { ApiKeyRecord, EndpointRecord, KeyCredential, ProjectRecord, WorkspaceRecord } from '../core/records.js';
import type { CatalogSnapshot, CatalogStore } from '../core/store/catalog-store.js';
import { createSqliteCatalog } from './catalog/sqlite-catalog.js';
import { dataVersion, type Db } from './db.js';

export interface Catalog extends KeyLookup {
  /** By external id (`proj_...`) or UUID. */
  project(ref: string): ProjectRecord | null;
  workspaces(projectId: string): ReadonlyMap<string, WorkspaceRecord>;
  /** The project a workspace id belongs to, whichever it is (SPEC 403 `project_mismatch`), or null. */
  workspaceProject(workspaceId: string): string | null;
  endpoint(projectId: string, slug: string): EndpointRecord | null;
  endpoints(projectId: string): readonly EndpointRecord[];
  /** Reads the store again; the promise (PostgreSQL) settles once the new snapshot is in use, and never rejects. */
  reload(): void | Promise<void>;
  close(): void;
}

/** The PostgreSQL catalog: it holds every key, so a key is also found by id (batch lines run under their key). */
export interface PreloadedCatalog extends Catalog {
  keyInProject(projectId: string, keyId: string): ApiKeyRecord | null;
  reload(): Promise<void>;
}

const EMPTY_WORKSPACES: ReadonlyMap<string, WorkspaceRecord> = new Map();

interface Indexed {
  readonly projects: Map<string, ProjectRecord>;
  readonly workspaces: Map<string, Map<string, WorkspaceRecord>>;
  readonly workspaceProject: Map<string, string>;
  readonly endpoints: Map<string, EndpointRecord[]>;
  // By project, then slug: a lookup per request on the strings it already holds, no key built.
  readonly endpointBySlug: Map<string, Map<string, EndpointRecord>>;
}

function index(snapshot: Omit<CatalogSnapshot, 'credentials'>): Indexed {
  const projects = new Map<string, ProjectRecord>();
  for (const p of snapshot.projects) {
    projects.set(p.id, p);
    projects.set(p.uuid, p);
  }
  const workspaces = new Map<string, Map<string, WorkspaceRecord>>();
  const workspaceProject = new Map<string, string>();
  for (const w of snapshot.workspaces) {
    workspaceProject.set(w.id, w.projectId);
    const m = workspaces.get(w.projectId) ?? new Map<string, WorkspaceRecord>();
    m.set(w.id, w);
    workspaces.set(w.projectId, m);
  }
  const endpoints = new Map<string, EndpointRecord[]>();
  const endpointBySlug = new Map<string, Map<string, EndpointRecord>>();
  for (const e of snapshot.endpoints) {
    endpoints.set(e.projectId, [...(endpoints.get(e.projectId) ?? []), e]);
    let bySlug = endpointBySlug.get(e.projectId);
    if (!bySlug) endpointBySlug.set(e.projectId, (bySlug = new Map()));
    bySlug.set(e.slug, e);
  }
  return { projects, workspaces, workspaceProject, endpoints, endpointBySlug };
}

function readers(current: () => Indexed): Pick<Catalog, 'project' | 'workspaces' | 'workspaceProject' | 'endpoint' | 'endpoints'> {
  return {
    project: (ref) => current().projects.get(ref) ?? null,
    workspaces: (projectId) => current().workspaces.get(projectId) ?? EMPTY_WORKSPACES,
    workspaceProject: (workspaceId) => current().workspaceProject.get(workspaceId) ?? null,
    endpoint: (projectId, slug) => current().endpointBySlug.get(projectId)?.get(slug) ?? null,
    endpoints: (projectId) => current().endpoints.get(projectId) ?? [],
  };
}

export function createCatalog(db: Db, pollMs = 1000): Catalog {
  const stored = createSqliteCatalog(db);

  let indexed: Indexed;
  // Only hits are cached: caching misses would let a stream of random keys grow memory without bound.
  let credentials = new Map<string, KeyCredential>();
  let seenVersion = dataVersion(db);

  function reload(): void {
    indexed = index(stored.snapshot());
    credentials = new Map();
    seenVersion = dataVersion(db);
  }

  const timer = setInterval(() => {
    if (dataVersion(db) !== seenVersion) reload();
  }, pollMs);
  timer.unref();
  reload();

  return {
    ...readers(() => indexed),
    findCredential(hash) {
      const cached = credentials.get(hash);
      if (cached) return cached;
      const found = stored.findCredential(hash);
      if (found) credentials.set(hash, found);
      return found;
    },
    reload,
    close: () => clearInterval(timer),
  };
}

/**
 * Unknown keys asked of PostgreSQL at once (lookupMissed); past it a miss is a 401 without a query, so a
 * stream of random keys costs the store at most this many queries in flight.
 */
const MAX_MISS_LOOKUPS = 4;

export interface PreloadedCatalogOptions {
  readonly store: Pick<CatalogStore, 'loadSnapshot' | 'findCredential'>;
  /** Subscribes to the store's change notices (PgStore.onChange); returns the unsubscribe. */
  readonly onChange: (topic: 'catalog', fn: () => void) => () => void;
  /** A failed reload keeps the previous snapshot; the next notice (or the listener's reconnection) tries again. */
  readonly onError: (err: unknown) => void;
}

export async function createPreloadedCatalog({ store, onChange, onError }: PreloadedCatalogOptions): Promise<PreloadedCatalog> {
  let indexed: Indexed;
  let credentials: ReadonlyMap<string, KeyCredential> = new Map();
  let keysById = new Map<string, ApiKeyRecord>();
  // Keys read one by one since the last snapshot (lookupMissed); the next snapshot holds them, and replaces them.
  let late = new Map<string, KeyCredential>();
  let loads = 0;
  let missLookups = 0;

  const load = async (): Promise<void> => {
    const snapshot = await store.loadSnapshot();
    indexed = index(snapshot);
    credentials = snapshot.credentials ?? new Map();
    keysById = new Map([...credentials.values()].map((c) => [c.key.id, c.key]));
    late = new Map();
    loads += 1;
  };
  await load();

  // Loads run one at a time, so an older snapshot never replaces a newer one. A caller gets a load that
  // starts after its call (it sees every commit made before), shared with whoever else asked meanwhile.
  let queued: Promise<void> | null = null;
  let last: Promise<void> = Promise.resolve();
  const reload = (): Promise<void> => {
    if (queued) return queued;
    const next = last.then(async () => {
      queued = null;
      await load().catch(onError);
    });
    queued = next;
    last = next;
    return next;
  };
  const unsubscribe = onChange('catalog', () => void reload());

  return {
    ...readers(() => indexed),
    findCredential: (hash) => credentials.get(hash) ?? late.get(hash) ?? null,
    async lookupMissed(hash) {
      if (missLookups >= MAX_MISS_LOOKUPS) return false;
      missLookups += 1;
      const before = loads;
      try {
        const found = await store.findCredential(hash);
        if (found === null) return false;
        // A snapshot loaded meanwhile is newer than this read (a revocation may be in it): it decides.
        if (loads !== before) return credentials.has(hash);
        late.set(hash, found);
        return true;
      } catch {
        return false;
      } finally {
        missLookups -= 1;
      }
    },
    keyInProject(projectId, keyId) {
      const key = keysById.get(keyId);
      return key && key.projectId === projectId ? key : null;
    },
    reload,
    close: unsubscribe,
  };
}
