/** What routes and use cases receive from the composition root (src/main.ts). */
import type { AdmissionPort, DependencyHealth } from '../core/coordination/admission-port.js';
import type { Budgets } from '../core/limits/budgets.js';
import type { Catalog } from '../store/catalog.js';
import type { ModelAliasReader } from '../core/store/router-store.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { WorkerPool } from '../pool/worker-pool.js';

export interface Services {
  readonly catalog: Catalog;
  readonly pool: WorkerPool;
  readonly metrics: Metrics;
  /** For events that are not requests (a realtime session's end); requests are logged by the server. */
  readonly logger: Logger;
  /** Unix milliseconds; injected so tests can move time. */
  readonly now: () => number;
  readonly isStoreOpen: () => boolean;
  /** PostgreSQL's state for /readyz, when the store is PostgreSQL (store/backend.ts). */
  readonly storeHealth?: () => DependencyHealth | null;
  /**
   * Request and token limiters (SPEC "Limits"), applied by guard.ts on every keyed route: in this thread,
   * shared by the worker threads, or in Redis (src/coordination/coordination.ts).
   */
  readonly limits: AdmissionPort;
  /** Endpoint and workspace token budgets, checked by routes that spend tokens. */
  readonly budgets: Budgets;
  /** Project model aliases (the Models API): model-addressed routes resolve them; absent: none exist. */
  readonly modelAliases?: ModelAliasReader;
}
