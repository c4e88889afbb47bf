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

  return {
    registry,
    requestStarted(family) {
      inFlight.inc({ family });
    },
    requestFinished(family, status, seconds, upstreamSeconds) {
      inFlight.dec({ family });
      requests.inc({ family, status: String(status) });
      latency.observe({ family }, seconds);
      if (upstreamSeconds !== undefined) upstream.observe({ family }, upstreamSeconds);
    },
  };
}
