/**
 * Prometheus metrics (prom-client), served at GET /metrics. Label sets are small and fixed (route family,
 * status), never ids, so cardinality stays bounded.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Aggregator, MetricObjectWithValues, MetricType, MetricValueWithName } from 'prom-client';

export interface Metrics {
  readonly registry: Registry;
  requestStarted(family: string): void;
  requestFinished(family: string, status: number, seconds: number, upstreamSeconds: number | undefined): void;
  /** An exception that was not a GatewayError (a bug), by where it was caught. */
  unexpectedError(where: string): void;
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export function createMetrics(poolQueueSize: () => number, poolUtilization: () => number): Metrics {
  const registry = new Registry();
  // Includes nodejs_eventloop_lag_* and the event-loop delay histogram summary.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 });
  // The per-request metrics are plain numbers on the hot path, handed to prom-client only at scrape time:
  // its labelled inc/observe allocate and hash the label set on every call (1.3 us per request for these
  // four updates, measured), more than everything else the metrics do.
  const counts = new Map<string, Map<number, number>>();
  const inFlightCounts = new Map<string, number>();
  new Counter({
    name: 'switchboard_requests_total',
    help: 'Requests by route family and status.',
    labelNames: ['family', 'status'] as const,
    registers: [registry],
    collect() {
      for (const [family, byStatus] of counts) {
        for (const [status, n] of byStatus) if (n > 0) this.inc({ family, status: String(status) }, n);
        byStatus.clear();
      }
    },
  });
  const latency = new FamilyHistogram('switchboard_request_duration_seconds', 'Request latency from first byte in to last byte out.', LATENCY_BUCKETS);
  const upstream = new FamilyHistogram('switchboard_upstream_duration_seconds', 'Time spent waiting on the model server.', LATENCY_BUCKETS);
  registry.registerMetric(latency);
  registry.registerMetric(upstream);
  new Gauge({
    name: 'switchboard_requests_in_flight',
    help: 'Requests being served.',
    labelNames: ['family'] as const,
    registers: [registry],
    collect() {
      for (const [family, n] of inFlightCounts) this.set({ family }, n);
    },
  });
  new Gauge({
    name: 'switchboard_pool_queue_depth',
    help: 'Tasks waiting for a worker thread.',
    registers: [registry],
    collect() {
      this.set(poolQueueSize());
    },
  });
  new Gauge({
    name: 'switchboard_pool_utilization',
    help: 'Share of worker-thread time spent on tasks (0 to 1).',
    registers: [registry],
    collect() {
      this.set(poolUtilization());
    },
  });

  const unexpected = new Counter({
    name: 'switchboard_unexpected_errors_total',
    help: 'Exceptions that were not gateway errors (bugs), by where they were caught; each is logged with its stack.',
    labelNames: ['where'] as const,
    registers: [registry],
  });

  return {
    registry,
    unexpectedError(where) {
      unexpected.inc({ where });
    },
    requestStarted(name) {
      inFlightCounts.set(name, (inFlightCounts.get(name) ?? 0) + 1);
    },
    requestFinished(name, status, seconds, upstreamSeconds) {
      inFlightCounts.set(name, (inFlightCounts.get(name) ?? 1) - 1);
      let byStatus = counts.get(name);
      if (!byStatus) counts.set(name, (byStatus = new Map()));
      byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
      latency.record(name, seconds);
      if (upstreamSeconds !== undefined) upstream.record(name, upstreamSeconds);
    },
  };
}

interface FamilySeries {
  /** Per bucket (not cumulative); the last slot is +Inf. */
  readonly buckets: Float64Array;
  sum: number;
  count: number;
}

/**
 * A histogram labelled by route family, recorded into plain arrays and rendered by prom-client's registry
 * like any of its histograms (`_bucket` with `le`, `_sum`, `_count`).
 */
class FamilyHistogram extends Histogram<'family' | 'le'> {
  // Set by prom-client's constructor; its typings leave them out.
  declare readonly name: string;
  declare readonly help: string;
  declare readonly type: MetricType;
  declare readonly aggregator: Aggregator;
  readonly #bounds: readonly number[];
  readonly #series = new Map<string, FamilySeries>();

  constructor(name: string, help: string, bounds: readonly number[]) {
    super({ name, help, labelNames: ['family'], buckets: [...bounds], registers: [] });
    this.#bounds = bounds;
  }

  record(family: string, seconds: number): void {
    let series = this.#series.get(family);
    if (!series) this.#series.set(family, (series = { buckets: new Float64Array(this.#bounds.length + 1), sum: 0, count: 0 }));
    let i = 0;
    while (i < this.#bounds.length && seconds > (this.#bounds[i] as number)) i++;
    series.buckets[i] = (series.buckets[i] ?? 0) + 1;
    series.sum += seconds;
    series.count += 1;
  }

  override async get(): Promise<MetricObjectWithValues<MetricValueWithName<'family' | 'le'>>> {
    const values: MetricValueWithName<'family' | 'le'>[] = [];
    for (const [family, series] of this.#series) {
      let cumulative = 0;
      this.#bounds.forEach((le, i) => {
        cumulative += series.buckets[i] ?? 0;
        values.push({ metricName: `${this.name}_bucket`, labels: { le, family }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', family }, value: series.count });
      values.push({ metricName: `${this.name}_sum`, labels: { family }, value: series.sum });
      values.push({ metricName: `${this.name}_count`, labels: { family }, value: series.count });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator, collect: () => undefined };
  }

  /** What the registry renders from, when a metric has it (prom-client's own histogram does). */
  getForPromString(): Promise<MetricObjectWithValues<MetricValueWithName<'family' | 'le'>>> {
    return this.get();
  }

  override reset(): void {
    // prom-client's constructor calls reset() before this class's fields exist.
    if (#series in this) this.#series.clear();
  }
}
