/**
 * One /metrics for the whole process under `serve --workers N` (issue 32): the worker a scrape lands on
 * asks every other worker for its registry (worker-rpc.ts) and merges them with prom-client's
 * AggregatorRegistry, so a counter is the process's total at every scrape, whichever worker answers.
 *
 * How series merge: counters and histograms add up; gauges follow their `aggregator` (sum unless the
 * metric says otherwise: the pool's utilization is averaged, prom-client's event-loop lag averaged, its
 * version "first"). The `process_*` metrics describe the one process every worker shares (CPU, memory,
 * file descriptors, start time), so they are taken once, not added N times (and the start time is kept,
 * where cluster mode, one process per worker, omits it).
 *
 * A worker that does not answer within WORKER_METRICS_TIMEOUT_MS (busy, dying, being replaced) is left
 * out of that scrape and counted in `switchboard_metrics_workers_missing`, so a dashboard can tell a
 * partial scrape from a drop in traffic; the scrape never waits longer. Without workers none of this
 * runs: /metrics renders the registry directly, as before.
 */
import { AggregatorRegistry, Gauge, type MetricObjectWithValues, type MetricValue, type Registry } from 'prom-client';
import type { WorkerRpc } from './coordination/worker-rpc.js';

/** Well under Prometheus's default scrape timeout (10 s): a stuck worker costs a scrape this long at most. */
export const WORKER_METRICS_TIMEOUT_MS = 2_000;

const METHOD = 'metrics';

type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];

/** Answers the other workers' scrapes with this worker's registry; returns the process's scrape. */
export function workersMetrics(registry: Registry, rpc: WorkerRpc, timeoutMs = WORKER_METRICS_TIMEOUT_MS): () => Promise<string> {
  // As JSON text: a metric's object may carry functions (a collect hook), which do not cross threads.
  rpc.handle(METHOD, async () => JSON.stringify(await registry.getMetricsAsJSON()));
  return async () => {
    const [own, others] = await Promise.all([registry.getMetricsAsJSON() as Promise<MetricsJson>, rpc.gather(METHOD, null, timeoutMs)]);
    const parsed = others.answers.filter((a): a is string => typeof a === 'string').map((a) => JSON.parse(a) as MetricsJson);
    const merged = AggregatorRegistry.aggregate([own, ...parsed].map(onceForTheProcess));
    new Gauge({
      name: 'switchboard_metrics_workers_missing',
      help: 'Workers whose metrics did not arrive in time for this scrape (left out of every other series).',
      registers: [merged],
    }).set(others.missing + (others.answers.length - parsed.length));
    return merged.metrics();
  };
}

/** The process-wide series are the same in every worker: taken from the first answer, not added up. */
function onceForTheProcess(metrics: MetricsJson): MetricsJson {
  return metrics.map((m) => (m.name.startsWith('process_') ? { ...m, aggregator: 'first' } : m));
}
