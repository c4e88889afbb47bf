/** What route handlers receive from the composition root. */
import type { Catalog } from '../store/catalog.js';
import type { Metrics } from '../metrics.js';
import type { WorkerPool } from '../pool/worker-pool.js';

export interface Services {
  readonly catalog: Catalog;
  readonly pool: WorkerPool;
  readonly metrics: Metrics;
  /** Unix milliseconds; injected so tests can move time. */
  readonly now: () => number;
  readonly isStoreOpen: () => boolean;
}
