/**
 * The HTTP surfaces: the gateway's server (the route table, the WebSocket routes, what is done as each
 * request completes), the optional metrics listener, tracing and the access log.
 */
import { accessLogOf } from '../access-line.js';
import type { ChatServices } from '../app/chat/chat-dispatch.js';
import type { Services } from '../app/services.js';
import { ConfigError, type Config } from '../config.js';
import type { WorkerRpc } from '../coordination/worker-rpc.js';
import { GatewayError } from '../errors.js';
import { createHttpServer, type HttpServer, type HttpServerOptions, type RouteDef } from '../http/server.js';
import type { Uws } from '../http/uws.js';
import type { AnswerBarrier } from '../http/reply.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { workersMetrics } from '../metrics-workers.js';
import { execAgentsConnectRoutes } from '../routes/exec-agents-connect.js';
import { metricsRoutes, readyzRoute } from '../routes/ops.js';
import { realtimeRoutes, realtimeSettingsFrom } from '../routes/realtime.js';
import type { RouterSystem } from '../router/router-system.js';
import type { Catalog } from '../store/catalog.js';
import type { StoreBackend } from '../store/backend.js';
import { isPostgresUnavailable } from '../store/postgres/pg-errors.js';
import type { Tracing } from '../tracing/request-tracer.js';
import type { UpstreamClient } from '../upstream/upstream-client.js';
import { VERSION } from '../version.js';
import type { AgentsSystem } from '../exec/agents/agents-system.js';

/** The scrape token, read once at start: it guards /metrics and /readyz's detail. A named variable that is not set is a configuration error. */
export function metricsToken(name: string | undefined): string | null {
  if (name === undefined) return null;
  const value = process.env[name];
  if (!value) throw new ConfigError(`server.metrics.token_env: the environment variable ${name} is not set (or empty); /metrics would be open`);
  return value;
}

export interface MetricsSurface {
  /** The metrics listener, with `server.metrics.port` set; null: /metrics is among the gateway's routes. */
  readonly server: HttpServer | null;
  /** /metrics, for the gateway's route table when there is no listener of its own. */
  readonly routes: RouteDef[];
}

export interface MetricsSurfaceDeps {
  readonly uws: Uws;
  readonly config: Config;
  readonly services: Services;
  readonly metrics: Metrics;
  readonly upstream: UpstreamClient;
  readonly token: string | null;
  readonly workerRpc: WorkerRpc | null;
  readonly sharedPort: boolean;
  readonly workerId: string;
  readonly logger: Logger;
}

/**
 * With a port of its own, /metrics is served there only (a scrape network apart from client traffic),
 * and /readyz there answers with its detail (upstream servers, dependencies) to every caller.
 */
export function wireMetricsSurface(d: MetricsSurfaceDeps): MetricsSurface {
  const { services, token, upstream, logger } = d;
  const scrape = metricsRoutes(services, token, d.workerRpc ? workersMetrics(d.metrics.registry, d.workerRpc) : undefined);
  if (d.config.server.metrics.port === undefined) return { server: null, routes: scrape };
  const server = createHttpServer({
    uws: d.uws,
    routes: [...scrape, readyzRoute(services, { token, always: true }, upstream)],
    maxBodyBytes: 0,
    production: false,
    trustProxy: false,
    // Every worker listens on it (the launcher picked one port for `port: 0`); a scrape on any gets the whole process.
    sharedPort: d.sharedPort,
    workerId: d.workerId,
    onComplete: () => undefined,
    onUnexpectedError: (err) => logger.error({ err }, 'metrics listener: unexpected error'),
  });
  return { server, routes: [] };
}

export async function listenMetrics(server: HttpServer, config: Config, host: string, logger: Logger): Promise<void> {
  const metricsHost = config.server.metrics.host ?? host;
  const metricsPort = await server.listen(metricsHost, config.server.metrics.port ?? 0);
  logger.info({ url: `http://${metricsHost.includes(':') ? `[${metricsHost}]` : metricsHost}:${metricsPort}/metrics` }, 'metrics listening');
}

export interface GatewayServerDeps {
  readonly uws: Uws;
  readonly config: Config;
  readonly routes: RouteDef[];
  readonly services: Services;
  readonly chatServices: ChatServices;
  readonly agents: AgentsSystem;
  readonly catalog: Catalog;
  readonly routing: RouterSystem;
  readonly backend: StoreBackend;
  readonly metrics: Metrics;
  readonly sharedPort: boolean;
  /** New at every start and distinct per worker thread (each runs startGateway): docs/decisions.md. */
  readonly workerId: string;
  readonly tracing: Tracing | null;
  readonly logger: Logger;
  readonly answerBarrier: AnswerBarrier | null;
}

/**
 * The OpenTelemetry tracer, or null with tracing off (the default): then no request gets a trace, and the
 * SDK is never loaded (it was a tenth of a second of every start).
 */
export async function openTracing(config: Config, workerId: string): Promise<Tracing | null> {
  if (!config.tracing.enabled || config.tracing.otlp_endpoint === undefined) return null;
  const { createTracing } = await import('../tracing/request-tracer.js');
  return createTracing(config.tracing, { version: VERSION, instanceId: workerId, headers: envValues(config.tracing.headers_env, 'tracing.headers_env') });
}

export function wireGatewayServer(d: GatewayServerDeps): HttpServer {
  const { config, logger, metrics, tracing } = d;
  const server = createHttpServer({
    uws: d.uws,
    routes: d.routes,
    ws: {
      routes: [
        ...realtimeRoutes({ ...d.chatServices, realtimeSettings: realtimeSettingsFrom(new Map(config.projects.flatMap((p) => p.endpoints.map((e) => [e.id, e.realtime] as const)))) }),
        ...execAgentsConnectRoutes(d.agents),
      ],
      maxPayloadBytes: config.audio.realtime_max_message_bytes,
    },
    maxBodyBytes: config.server.max_body_bytes,
    production: config.server.production,
    trustProxy: config.server.trust_proxy,
    tls: config.server.tls,
    sharedPort: d.sharedPort,
    workerId: d.workerId,
    tracer: tracing?.tracer ?? null,
    answerBarrier: d.answerBarrier,
    onStart: (family) => metrics.requestStarted(family),
    logClientAddress: logger.isLevelEnabled('info'),
    nameDependencyError: dependencyErrorNamer(d.backend, logger),
    onUnexpectedError: (err, where, req) => {
      metrics.unexpectedError(where);
      logger.error({ err, where, request_id: req?.requestId, method: req?.method, path: req?.path }, 'unexpected error');
    },
    onComplete: requestFinisher(d),
  });
  return server;
}

/** A management or dashboard request that needed PostgreSQL while it is down or too slow (a bound of pg-store.ts cut it): 503, logged, not a bug. */
function dependencyErrorNamer(backend: StoreBackend, logger: Logger): NonNullable<HttpServerOptions['nameDependencyError']> {
  return (err, req) => {
    if (backend.pg === null || !isPostgresUnavailable(err)) return null;
    logger.warn({ err, request_id: req.requestId, path: req.path }, 'storage: PostgreSQL unreachable or too slow; answered 503 store_unavailable');
    return new GatewayError('store_unavailable');
  };
}

/** What every completed request feeds: metrics, the router's latency windows, the access log, its trace. */
function requestFinisher({ metrics, catalog, routing, logger }: GatewayServerDeps): HttpServerOptions['onComplete'] {
  const accessLog = accessLogOf(logger);
  return (done) => {
    const log = done.req.log;
    const upstreamSeconds = log.upstreamMs === undefined ? undefined : log.upstreamMs / 1000;
    metrics.requestFinished(done.family, done.status, done.durationMs / 1000, upstreamSeconds);
    const endpoint = log.project !== undefined && log.endpoint !== undefined ? catalog.endpoint(log.project, log.endpoint) : null;
    if (endpoint) {
      metrics.endpointFinished({ project: endpoint.projectId, endpoint: endpoint.slug, model: endpoint.model.id }, done.status, upstreamSeconds, log.ttftMs === undefined ? undefined : log.ttftMs / 1000);
      // Streamed turns feed the latency windows the router's objectives are judged on (issue 14).
      if (log.firstTokenMs !== undefined && done.status === 200 && endpoint.kind === 'chat') routing.slos.record(endpoint.id, log.firstTokenMs, log.tpotMs ?? null);
    }
    // One line per request, with what operators search by; never a key value or prompt text.
    accessLog.write(done, endpoint?.model.id);
    done.req.trace?.end(done, endpoint?.model.id);
  };
}

/** Values of a `{name: ENV_VAR}` map, read once at start: a named variable that is not set is a configuration error. */
function envValues(names: Readonly<Record<string, string>>, field: string): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [name, env] of Object.entries(names)) {
    const value = process.env[env];
    if (!value) throw new ConfigError(`${field}.${name}: the environment variable ${env} is not set (or empty)`);
    values[name] = value;
  }
  return values;
}
