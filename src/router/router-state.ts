/**
 * The router's stored state as the request path reads it (issue 12): settings and rules, SLOs and model
 * aliases, synchronously, and their writes through the router store (core/store/router-store.ts).
 *
 * Settings and rules are always held in memory (every routed turn reads them). SLOs and aliases:
 * - embedded (SQLite): read from the file on each use, as before, so processes sharing the file agree
 *   without a bus;
 * - shared (PostgreSQL): held in memory, reloaded whenever any replica commits a router change
 *   (`store.onChange`), and by the writer right after its write, so it reads its own write.
 */
import type { EndpointSlo, ModelAliasReader, ProjectRouterState, RouterStore } from '../core/store/router-store.js';
import { createReloadingCache } from './reloading-cache.js';

/** Read per routed turn; written by the management API and the dashboard (router-admin.ts). */
export interface RouterSettingsCache {
  get(projectId: string): ProjectRouterState;
  /** The store's updateRouterState (a change of the stored state, serialized across replicas), then cached. */
  update(projectId: string, change: (current: ProjectRouterState) => ProjectRouterState, now: number): Promise<ProjectRouterState>;
  /** Reads every project's row again (another process wrote); never rejects. */
  reload(): Promise<void>;
}

/** The Models API's aliases: read per model-addressed request, written by its routes. */
export interface ModelAliasBook extends ModelAliasReader {
  /** false when the alias already exists. */
  create(projectId: string, alias: string, target: string, now: number): Promise<boolean>;
  /** false when there is no such alias. */
  update(projectId: string, alias: string, target: string, now: number): Promise<boolean>;
  delete(projectId: string, alias: string): Promise<boolean>;
}

/** The stored latency objectives: read per routed turn with a choice to make, written by POST /v1/slos. */
export interface SloBook {
  list(projectId: string): EndpointSlo[];
  put(projectId: string, endpointId: string, objectives: { ttftMs: number | null; tpotMs: number | null }, now: number): Promise<EndpointSlo>;
}

export interface RouterState {
  readonly store: RouterStore;
  /** true with PostgreSQL: decision rows go to it in batches of this process's own (router-system.ts). */
  readonly shared: boolean;
  readonly settings: RouterSettingsCache;
  readonly slos: SloBook;
  readonly aliases: ModelAliasBook;
  close(): void;
}

/** With SQLite, SLOs and aliases are read from the file the store is over (main.ts passes its repositories). */
export interface EmbeddedRouterReads {
  readonly slos: Pick<SloBook, 'list'>;
  readonly aliases: ModelAliasReader;
}

const EMPTY: ProjectRouterState = { settings: {}, rules: [] };

/** `embedded`: the SQLite file's direct reads of SLOs and aliases; null with PostgreSQL, where they are cached. */
export async function openRouterState(store: RouterStore, embedded: EmbeddedRouterReads | null, onError: (err: unknown) => void): Promise<RouterState> {
  const states = await createReloadingCache(() => store.routerStates(), onError);
  const settings: RouterSettingsCache = {
    get: (projectId) => states.current().get(projectId) ?? EMPTY,
    async update(projectId, change, now) {
      const state = await store.updateRouterState(projectId, change, now);
      states.replace(new Map(states.current()).set(projectId, state));
      return state;
    },
    reload: states.reload,
  };
  if (embedded) {
    const { slos: slosRepo, aliases: aliasesRepo } = embedded;
    return {
      store,
      shared: false,
      settings,
      slos: { list: (projectId) => slosRepo.list(projectId), put: (...args) => store.putSlo(...args) },
      aliases: { get: (p, a) => aliasesRepo.get(p, a), list: (p) => aliasesRepo.list(p), ...aliasWrites(store, async () => undefined) },
      close: () => undefined,
    };
  }

  const slos = await createReloadingCache(async () => byProject(await store.slos()), onError);
  const aliases = await createReloadingCache(async () => byProject(await store.aliases()), onError);
  const reloadAll = (): Promise<void> => Promise.all([states.reload(), slos.reload(), aliases.reload()]).then(() => undefined);
  const stopListening = store.onChange(() => void reloadAll());
  return {
    store,
    shared: true,
    settings,
    slos: {
      list: (projectId) => [...(slos.current().get(projectId) ?? [])],
      async put(...args) {
        const stored = await store.putSlo(...args);
        await slos.reload();
        return stored;
      },
    },
    aliases: {
      get: (projectId, alias) => aliases.current().get(projectId)?.find((a) => a.alias === alias) ?? null,
      list: (projectId) => [...(aliases.current().get(projectId) ?? [])],
      ...aliasWrites(store, () => aliases.reload()),
    },
    close: stopListening,
  };
}

function aliasWrites(store: RouterStore, reload: () => Promise<void>): Pick<ModelAliasBook, 'create' | 'update' | 'delete'> {
  const then = async (done: Promise<boolean>): Promise<boolean> => {
    const changed = await done;
    if (changed) await reload();
    return changed;
  };
  return {
    create: (projectId, alias, target, now) => then(store.createAlias(projectId, alias, target, now)),
    update: (projectId, alias, target, now) => then(store.updateAlias(projectId, alias, target, now)),
    delete: (projectId, alias) => then(store.deleteAlias(projectId, alias)),
  };
}

/** Rows grouped by project, in the store's order. */
function byProject<R extends { readonly projectId: string }>(rows: readonly R[]): Map<string, R[]> {
  const out = new Map<string, R[]>();
  for (const r of rows) {
    const list = out.get(r.projectId);
    if (list) list.push(r);
    else out.set(r.projectId, [r]);
  }
  return out;
}
