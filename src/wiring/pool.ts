/** The worker pool (src/pool/), started before anything queues work on it, and the metrics that read its queue. */
import type { Config } from '../config.js';
import { createMetrics, type Metrics } from '../metrics.js';
import { createWorkerPool, type WorkerPool } from '../pool/worker-pool.js';

export async function wirePool(config: Config): Promise<{ pool: WorkerPool; metrics: Metrics }> {
  const pool = createWorkerPool({ minThreads: config.pool.min_threads, maxThreads: config.pool.max_threads });
  await pool.whenReady();
  const metrics = createMetrics(() => pool.queueSize, () => pool.utilization);
  return { pool, metrics };
}
