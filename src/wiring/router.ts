/**
 * The semantic router: its state (settings, rules, SLOs and model aliases, in memory from PostgreSQL when
 * the store is shared), the router system, and the management use cases the API and the dashboard share.
 */
import type { Config } from '../config.js';
import { attachBus } from '../coordination/bus-wiring.js';
import type { Logger } from '../log.js';
import type { WorkerPool } from '../pool/worker-pool.js';
import { createRouterAdmin } from '../router/router-admin.js';
import { openRouterState, type RouterState } from '../router/router-state.js';
import { createRouterSystem, type RouterLocalStorage, type RouterSystem } from '../router/router-system.js';
import { createDecisionLog } from '../store/decision-log.js';
import { createEmbeddingCache } from '../store/embedding-cache.js';
import { createModelAliasesRepo } from '../store/model-aliases-repo.js';
import { loadSecretBox, storedSealedValues } from '../store/secret-box.js';
import { createSlosRepo } from '../store/slos-repo.js';
import type { RouterManagementDeps } from '../app/router-management.js';
import type { Services } from '../app/services.js';
import { createRouterStore } from '../store/router/router-store.js';
import type { StoreWriter } from '../store/store-writer.js';
import type { UpstreamClient } from '../upstream/upstream-client.js';
import type { LimitsParts } from './limits.js';
import type { StoreParts } from './store.js';

/** Opened before the routes are built: they resolve model aliases through it. */
export function openRouterStateOf({ backend, db, mainSql }: StoreParts, logger: Logger): Promise<RouterState> {
  return openRouterState(createRouterStore(mainSql), backend.pg ? null : { slos: createSlosRepo(db), aliases: createModelAliasesRepo(db) }, (err) =>
    logger.error({ err }, 'router state could not be reloaded; serving the last read'),
  );
}

export interface RoutingDeps {
  readonly config: Config;
  readonly storage: StoreParts;
  readonly limits: LimitsParts;
  readonly state: RouterState;
  readonly storeWriter: StoreWriter;
  readonly pool: WorkerPool;
  readonly upstream: UpstreamClient;
  readonly now: () => number;
  readonly logger: Logger;
}

/** The router system, with caches, budget charges and affinity kept right across workers or replicas (nothing with one process). */
export function wireRouting({ config, storage, limits, state, storeWriter, pool, upstream, now, logger }: RoutingDeps): RouterSystem {
  const { db, dbPath, catalog } = storage;
  const box = loadSecretBox(dbPath, storedSealedValues(db));
  // The router's SQLite reads and writes, handed in (the router imports no store: issue 33's layering).
  const local: RouterLocalStorage = {
    embeddingCache: createEmbeddingCache(db),
    box,
    usageByEndpoint: (projectId, since) => limits.usageStore.routedByEndpoint(projectId, since),
    decisionLog: (onError) => createDecisionLog(storeWriter, onError),
  };
  const routing = createRouterSystem({ config, local, state, storeWriter, pool, upstream, catalog, now, logger });
  attachBus(limits.coordination.bus, { catalog, routerSettings: routing.settings, affinity: routing.affinity, budgets: limits.budgets, storedBudgetCaps: limits.storedCaps, resyncBudgetSpend: limits.budgetSpend.resync });
  return routing;
}

/** The semantic-router management API and the dashboard's router page run one set of use cases (src/app/). */
export function routerManagementOf(services: Services, routing: RouterSystem, upstream: UpstreamClient): Services & RouterManagementDeps {
  return {
    ...services,
    router: routing.router,
    admin: createRouterAdmin(services.catalog, routing.settings, services.now),
    decisions: routing.decisions,
    decisionLog: routing.decisionLog,
    defaults: routing.defaults,
    routerId: routing.routerId,
    upstream,
    slos: routing.slos,
  };
}
