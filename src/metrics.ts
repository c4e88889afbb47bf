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
  /** A request an endpoint served (configured endpoints only: bounded label values). */
  endpointFinished(endpoint: EndpointLabels, status: number, upstreamSeconds: number | undefined, ttftSeconds: number | undefined): void;
  tokensBilled(endpoint: EndpointLabels, prompt: number, completion: number, cached: number): void;
  /** An upstream failure of an endpoint, by class of cause (upstream-client.ts UpstreamErrorClass). */
  upstreamError(project: string, endpoint: string, cause: string): void;
}

export interface EndpointLabels {
  readonly project: string;
  readonly endpoint: string;
  readonly model: string;
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
  const latency = new PlainHistogram('switchboard_request_duration_seconds', 'Request latency from first byte in to last byte out.', ['family'], LATENCY_BUCKETS);
  const upstream = new PlainHistogram('switchboard_upstream_duration_seconds', 'Time spent waiting on the model server.', ['family'], LATENCY_BUCKETS);
  const endpointUpstream = new PlainHistogram(
    'switchboard_endpoint_upstream_duration_seconds',
    'Time to the model server\'s answer (its headers, for a stream), per endpoint and model.',
    ['project', 'endpoint', 'model'],
    LATENCY_BUCKETS,
  );
  const ttft = new PlainHistogram('switchboard_time_to_first_token_seconds', 'Time from the request to the first streamed byte, per endpoint and model.', ['project', 'endpoint', 'model'], LATENCY_BUCKETS);
  for (const h of [latency, upstream, endpointUpstream, ttft]) registry.registerMetric(h);
  // Per endpoint: plain numbers on the hot path, like the family counts above.
  const endpointCounts: EndpointCounts = new Map();
  const tokenCounts: TokenCounts = new Map();
  registerEndpointCounters(registry, endpointCounts, tokenCounts);
  registerGauges(registry, inFlightCounts, poolQueueSize, poolUtilization);

  const upstreamErrors = new Counter({
    name: 'switchboard_upstream_errors_total',
    help: 'Upstream failures per endpoint, by cause: unreachable, failed_after_send, no_server, refused (401/403/404), overloaded (429/503), http_4xx, http_5xx.',
    labelNames: ['project', 'endpoint', 'cause'] as const,
    registers: [registry],
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
    upstreamError(project, endpoint, cause) {
      // Failures are rare next to requests: prom-client's labelled inc is fine here.
      upstreamErrors.inc({ project, endpoint, cause });
    },
    requestStarted(name) {
      inFlightCounts.set(name, (inFlightCounts.get(name) ?? 0) + 1);
    },
    requestFinished(name, status, seconds, upstreamSeconds) {
      inFlightCounts.set(name, (inFlightCounts.get(name) ?? 1) - 1);
      let byStatus = counts.get(name);
      if (!byStatus) counts.set(name, (byStatus = new Map()));
      byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
      latency.record(name, () => ({ family: name }), seconds);
      if (upstreamSeconds !== undefined) upstream.record(name, () => ({ family: name }), upstreamSeconds);
    },
    endpointFinished(e, status, upstreamSeconds, ttftSeconds) {
      const key = `${e.project}\u0000${e.endpoint}`;
      let entry = endpointCounts.get(key);
      if (!entry) endpointCounts.set(key, (entry = { labels: { ...e }, byStatus: new Map() }));
      entry.byStatus.set(status, (entry.byStatus.get(status) ?? 0) + 1);
      if (upstreamSeconds !== undefined) endpointUpstream.record(key, () => ({ ...e }), upstreamSeconds);
      if (ttftSeconds !== undefined) ttft.record(key, () => ({ ...e }), ttftSeconds);
    },
    tokensBilled(e, prompt, completion, cached) {
      const key = `${e.project}\u0000${e.endpoint}`;
      let entry = tokenCounts.get(key);
      if (!entry) tokenCounts.set(key, (entry = { labels: { ...e }, prompt: 0, completion: 0, cached: 0 }));
      entry.prompt += prompt;
      entry.completion += completion;
      entry.cached += cached;
    },
  };
}

type EndpointCounts = Map<string, { labels: EndpointLabels; byStatus: Map<number, number> }>;
type TokenCounts = Map<string, { labels: EndpointLabels; prompt: number; completion: number; cached: number }>;

/** Per-endpoint requests and tokens, counted as plain numbers on the hot path and handed over at scrape time. */
function registerEndpointCounters(registry: Registry, endpointCounts: EndpointCounts, tokenCounts: TokenCounts): void {
  new Counter({
    name: 'switchboard_endpoint_requests_total',
    help: 'Requests served by an endpoint, by status.',
    labelNames: ['project', 'endpoint', 'model', 'status'] as const,
    registers: [registry],
    collect() {
      for (const { labels, byStatus } of endpointCounts.values()) {
        for (const [status, n] of byStatus) if (n > 0) this.inc({ ...labels, status: String(status) }, n);
        byStatus.clear();
      }
    },
  });
  new Counter({
    name: 'switchboard_tokens_total',
    help: 'Tokens billed per endpoint and model, by kind (prompt, completion, cached prompt).',
    labelNames: ['project', 'endpoint', 'model', 'kind'] as const,
    registers: [registry],
    collect() {
      for (const t of tokenCounts.values()) {
        if (t.prompt > 0) this.inc({ ...t.labels, kind: 'prompt' }, t.prompt);
        if (t.completion > 0) this.inc({ ...t.labels, kind: 'completion' }, t.completion);
        if (t.cached > 0) this.inc({ ...t.labels, kind: 'cached' }, t.cached);
        t.prompt = t.completion = t.cached = 0;
      }
    },
  });
}

/** Requests in flight and the worker pool's queue and utilization, read at scrape time. */
function registerGauges(registry: Registry, inFlightCounts: Map<string, number>, poolQueueSize: () => number, poolUtilization: () => number): void {
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
    // Under `serve --workers N` each worker has its pool: the process's share is their mean (metrics-workers.ts).
    aggregator: 'average',
    registers: [registry],
    collect() {
      this.set(poolUtilization());
    },
  });
}

interface Series {
  readonly labels: Record<string, string>;
  /** Per bucket (not cumulative); the last slot is +Inf. */
  readonly buckets: Float64Array;
  sum: number;
  count: number;
}

/**
 * A histogram recorded into plain arrays, keyed by a label tuple the caller already holds as one string,
 * and rendered by prom-client's registry like any of its histograms (`_bucket` with `le`, `_sum`,
 * `_count`). Label values must come from a bounded set (route families, configured endpoints).
 */
class PlainHistogram<L extends string> extends Histogram<L | 'le'> {
  // Set by prom-client's constructor; its typings leave them out.
  declare readonly name: string;
  declare readonly help: string;
  declare readonly type: MetricType;
  declare readonly aggregator: Aggregator;
  readonly #bounds: readonly number[];
  readonly #series = new Map<string, Series>();

  constructor(name: string, help: string, labelNames: readonly L[], bounds: readonly number[]) {
    super({ name, help, labelNames: [...labelNames], buckets: [...bounds], registers: [] });
    this.#bounds = bounds;
  }

  /** `key` identifies the label tuple; `labels` is read only the first time the key is seen. */
  record(key: string, labels: () => Record<L, string>, seconds: number): void {
    let series = this.#series.get(key);
    if (!series) this.#series.set(key, (series = { labels: labels(), buckets: new Float64Array(this.#bounds.length + 1), sum: 0, count: 0 }));
    let i = 0;
    while (i < this.#bounds.length && seconds > (this.#bounds[i] as number)) i++;
    series.buckets[i] = (series.buckets[i] ?? 0) + 1;
    series.sum += seconds;
    series.count += 1;
  }

  override async get(): Promise<MetricObjectWithValues<MetricValueWithName<L | 'le'>>> {
    const values: MetricValueWithName<L | 'le'>[] = [];
    for (const series of this.#series.values()) {
      const labels = series.labels as Partial<Record<L | 'le', string | number>>;
      let cumulative = 0;
      this.#bounds.forEach((le, i) => {
        cumulative += series.buckets[i] ?? 0;
        values.push({ metricName: `${this.name}_bucket`, labels: { le, ...labels }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...labels }, value: series.count });
      values.push({ metricName: `${this.name}_sum`, labels, value: series.sum });
      values.push({ metricName: `${this.name}_count`, labels, value: series.count });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator, collect: () => undefined };
  }

  /** What the registry renders from, when a metric has it (prom-client's own histogram does). */
  getForPromString(): Promise<MetricObjectWithValues<MetricValueWithName<L | 'le'>>> {
    return this.get();
  }

  override reset(): void {
    // prom-client's constructor calls reset() before this class's fields exist.
    if (#series in this) this.#series.clear();
  }
}
