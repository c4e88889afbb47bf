/**
 * Composition root: config -> store -> pool -> routes -> http.listen. Nothing else wires modules together.
 */
import { createControllableClock, systemClock } from './clock.js';
import type { Config } from './config.js';
import { createHttpServer, type CompletedRequest, type RouteDef } from './http/server.js';
import { loadUws, UwsFallbackError } from './http/uws.js';
import { createLogger, flushLogger, type Logger } from './log.js';
import { createMetrics } from './metrics.js';
import { createWorkerPool } from './pool/worker-pool.js';
import type { ChatServices } from './routes/chat-dispatch.js';
import { chatCompletionsRoutes } from './routes/chat-completions.js';
import { endpointsRoutes } from './routes/endpoints.js';
import { modelsRoutes } from './routes/models.js';
import { notImplementedRoutes } from './routes/not-implemented.js';
import { opsRoutes, testClockRoutes } from './routes/ops.js';
import type { Services } from './routes/services.js';
import { createCatalog } from './store/catalog.js';
import { syncConfig } from './store/config-sync.js';
import { openDatabase } from './store/db.js';
import { createUsageLedger } from './store/usage-ledger.js';
import { createUpstreamClient } from './upstream/upstream-client.js';

export interface GatewayOptions {
  readonly config: Config;
  readonly host?: string | undefined;
  readonly port?: number | undefined;
  readonly dbPath?: string | undefined;
  readonly logger?: Logger;
}

export interface RunningGateway {
  readonly host: string;
  readonly port: number;
  readonly url: string;
  readonly logger: Logger;
  close(): Promise<void>;
}

export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const { config } = options;
  const logger = options.logger ?? createLogger(config.server.log_level);
  const { uws, native, binary } = loadUws();
  const allowFallback = config.server.allow_uws_fallback || process.env.SWITCHBOARD_ALLOW_UWS_FALLBACK === '1';
  if (!native && !allowFallback) throw new UwsFallbackError();
  if (native) logger.info({ binary }, 'uWebSockets.js: running on the native binary');
  else logger.warn('uWebSockets.js: running on the pure-JS fallback (allowed by the operator); expect far lower throughput');
  if (config.security.allow_private_targets || config.security.allow_http_targets) {
    logger.warn({ security: config.security }, 'outbound fetches may reach private addresses or plain HTTP: for local testing only');
  }

  const dbPath = options.dbPath ?? config.storage.path;
  const db = openDatabase(dbPath);
  const synced = syncConfig(db, config, Date.now());
  logger.info({ db: dbPath, ...synced }, 'config synced into the store');
  const catalog = createCatalog(db);
  const pool = createWorkerPool({ minThreads: config.pool.min_threads, maxThreads: config.pool.max_threads });
  await pool.whenReady();
  const metrics = createMetrics(
    () => pool.queueSize,
    () => pool.utilization,
  );
  const clock = config.testing.controllable_clock ? createControllableClock() : systemClock;
  if (clock.advance) logger.warn('testing.controllable_clock is on: POST /__test/clock can move time; never use this in production');
  const services: Services = { catalog, pool, metrics, now: clock.now, isStoreOpen: () => db.open };
  const upstream = createUpstreamClient();
  const usage = createUsageLedger(dbPath, (message) => logger.error({ message }, 'usage ledger write failed; will retry'));
  const chatServices: ChatServices = { ...services, upstream, usage, timeouts: config.timeouts, features: config.features };

  const implemented: RouteDef[] = [
    ...opsRoutes(services),
    ...testClockRoutes(clock),
    ...modelsRoutes(services),
    ...endpointsRoutes(services),
    ...chatCompletionsRoutes(chatServices),
  ];
  const server = createHttpServer({
    uws,
    routes: [...implemented, ...notImplementedRoutes(services, implemented)],
    maxBodyBytes: config.server.max_body_bytes,
    production: config.server.production,
    trustProxy: config.server.trust_proxy,
    tls: config.server.tls,
    onStart: (family) => metrics.requestStarted(family),
    onComplete: (done) => {
      metrics.requestFinished(done.family, done.status, done.durationMs / 1000, done.req.log.upstreamMs === undefined ? undefined : done.req.log.upstreamMs / 1000);
      logRequest(logger, done);
    },
  });
  const host = options.host ?? config.server.host;
  const port = await server.listen(host, options.port ?? config.server.port);
  const scheme = config.server.tls ? 'https' : 'http';
  const url = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  logger.info({ url, region: config.server.region, production: config.server.production }, 'switchboard listening');

  let closing: Promise<void> | null = null;
  return {
    host,
    port,
    url,
    logger,
    close() {
      closing ??= (async () => {
        logger.info({ inFlight: server.inFlight }, 'draining');
        await server.drain(config.server.drain_timeout_ms);
        await usage.close();
        await upstream.close();
        catalog.close();
        await pool.close();
        db.close();
        logger.info('stopped');
        flushLogger(logger);
      })();
      return closing;
    },
  };
}

function logRequest(logger: Logger, done: CompletedRequest): void {
  const { req } = done;
  logger.info(
    {
      request_id: req.requestId,
      method: req.method,
      family: done.family,
      project: req.log.project,
      endpoint: req.log.endpoint,
      status: done.status,
      aborted: done.aborted || undefined,
      latency_ms: Math.round(done.durationMs * 100) / 100,
      upstream_ms: req.log.upstreamMs,
    },
    'request',
  );
}
