/**
 * Prometheus metrics (prom-client), served at GET /metrics. Label sets are small and fixed (route family,
 * status), never ids, so cardinality stays bounded.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  readonly registry: Registry;
  requestStarted(family: string): void;
  requestFinished(family: string, status: number, seconds: number, upstreamSeconds: number | undefined): void;
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export function createMetrics(poolQueueSize: () => number, poolUtilization: () => number): Metrics {
  const registry = new Registry();
  // Includes nodejs_eventloop_lag_* and the event-loop delay histogram summary.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 });
  const requests = new Counter({
    name: 'switchboard_requests_total',
    help: 'Requests by route family and status.',
    labelNames: ['family', 'status'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'switchboard_request_duration_seconds',
    help: 'Request latency from first byte in to last byte out.',
    labelNames: ['family'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const upstream = new Histogram({
    name: 'switchboard_upstream_duration_seconds',
    help: 'Time spent waiting on the model server.',
    labelNames: ['family'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const inFlight = new Gauge({ name: 'switchboard_requests_in_flight', help: 'Requests being served.', labelNames: ['family'] as const, registers: [registry] });
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

  // Labelled children are cached: resolving a label set on every observation costs more than the update.
  const byFamily = new Map<string, { inFlight: Gauge.Internal<'family'>; latency: Histogram.Internal<'family'>; upstream: Histogram.Internal<'family'> }>();
  const family = (name: string) => {
    let children = byFamily.get(name);
    if (!children) {
      children = { inFlight: inFlight.labels(name), latency: latency.labels(name), upstream: upstream.labels(name) };
      byFamily.set(name, children);
    }
    return children;
  };
  const counters = new Map<string, Counter.Internal>();

  return {
    registry,
    requestStarted(name) {
      family(name).inFlight.inc();
    },
    requestFinished(name, status, seconds, upstreamSeconds) {
      const f = family(name);
      f.inFlight.dec();
      const key = `${name} ${status}`;
      let counter = counters.get(key);
      if (!counter) counters.set(key, (counter = requests.labels(name, String(status))));
      counter.inc();
      f.latency.observe(seconds);
      if (upstreamSeconds !== undefined) f.upstream.observe(upstreamSeconds);
    },
  };
}
