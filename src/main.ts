/**
 * Composition root: config -> store -> limits -> router -> exec -> routes -> http.listen. The parts are
 * built in src/wiring/ (one module per subsystem, README there); this file calls them in order, starts the
 * server and owns the stop order. Nothing else wires modules together.
 */
import type { Services } from './app/services.js';
import type { RouterChatServices } from './app/chat/router-chat-services.js';
import type { Config } from './config.js';
import type { SharedCoordination } from './coordination/coordination.js';
import { createLogger, flushLogger, type Logger } from './log.js';
import type { WorkerRpc } from './coordination/worker-rpc.js';
import type { HttpServer } from './http/server.js';
import type { WorkerPool } from './pool/worker-pool.js';
import type { FilesServices } from './routes/files.js';
import type { McpRoutes } from './routes/mcp.js';
import type { RouterSystem } from './router/router-system.js';
import type { Tracing } from './tracing/request-tracer.js';
import type { WebhookSystem } from './webhook-system.js';
import { wireBatches, type BatchParts } from './wiring/batches.js';
import { chatServicesOf, wireChat, type ChatParts } from './wiring/chat.js';
import { openIdentity, wireDashboard } from './wiring/dashboard.js';
import { wireExec, type ExecParts } from './wiring/exec.js';
import { wireFiles } from './wiring/files.js';
import { checkCanListen } from './http/port-check.js';
import { listenMetrics, metricsToken, openTracing, wireGatewayServer, wireMetricsSurface } from './wiring/http.js';
import { shareReplicas, wireLimits, type LimitsParts } from './wiring/limits.js';
import { wireMcp, wireWorkerRpc } from './wiring/mcp.js';
import { wirePool } from './wiring/pool.js';
import { wireResponses, type ResponsesParts } from './wiring/responses.js';
import { openRouterStateOf, routerManagementOf, wireRouting } from './wiring/router.js';
import { gatewayRoutes } from './wiring/routes.js';
import { loadRuntime } from './wiring/runtime.js';
import { openBusyStore, wireStore, type BusyStore, type StoreParts } from './wiring/store.js';
import { wireTesting } from './wiring/testing.js';
import { wireWebhooks } from './wiring/webhooks.js';

export interface GatewayOptions {
  readonly config: Config;
  readonly host?: string | undefined;
  readonly port?: number | undefined;
  readonly dbPath?: string | undefined;
  readonly logger?: Logger;
  /** A worker thread of `serve --workers N` (src/workers/): the process's shared counters and bus. */
  readonly shared?: SharedCoordination;
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
  const uws = loadRuntime(config, logger);
  // Not for a worker of `serve --workers N`: its siblings share its port (SO_REUSEPORT), so an exclusive probe would fail.
  if (options.shared === undefined) await checkCanListen(options.host ?? config.server.host, options.port ?? config.server.port);
  const storage = await wireStore(config, options.dbPath, logger);
  const { catalog, backend } = storage;
  const { pool, metrics } = await wirePool(config);
  const { testing, clock } = wireTesting(config, logger);
  const limits = await wireLimits(config, storage, clock, logger, options.shared);
  const { instances } = limits;
  const routerState = await openRouterStateOf(storage, logger);
  const services: Services = { catalog, pool, metrics, logger, now: clock.now, isStoreOpen: () => storage.db.open, storeHealth: backend.health, limits: limits.limits, budgets: limits.budgets, modelAliases: routerState.aliases };
  const chat = wireChat(config, storage, limits, metrics, clock.now, logger);
  const { upstream } = chat;
  const webhooks = await wireWebhooks(config, storage, limits, pool, clock.now, logger);
  const busy = openBusyStore(storage, (db) => webhooks.outboxOn(db));
  const filesServices = wireFiles(services, config, storage, webhooks.outbox, logger);
  const { shared, recoveryCue } = shareReplicas(backend.pg, webhooks.pgInstances, limits);
  const { identity, roleOf } = openIdentity(storage);
  const exec = wireExec({ config, services, storage, busy, limits, shared, workerThreads: options.shared, roleOf, recoveryCue, logger });
  const chatServices = chatServicesOf(services, config, chat, exec.execTools);
  const routing = wireRouting({ config, storage, limits, state: routerState, storeWriter: chat.storeWriter, pool, upstream, now: clock.now, logger });
  const batches = wireBatches({ config, storage, busy, files: filesServices.files, chatServices, shared, instanceId: instances.id, recoveryCue, logger });
  if (testing.events) logger.warn('testing.event_injection is on: POST /__test/webhook-events (loopback callers only) can emit events; never use this in production');
  const host = options.host ?? config.server.host;
  const workerRpc = wireWorkerRpc(options.shared);
  const mcp = wireMcp(config, host, exec, workerRpc);
  const routerChatServices: RouterChatServices = { ...chatServices, router: routing.router, decisionLog: routing.decisionLog, routerId: routing.routerId };
  const responses = await wireResponses(routerChatServices, busy, shared, instances.id, recoveryCue);
  const routerManagement = routerManagementOf(services, routing, upstream);
  const dashboard = await wireDashboard({ config, storage, identity, limits, routerManagement, routing, routerState, webhooks, exec, upstream, now: clock.now });
  const metricsScrapeToken = metricsToken(config.server.metrics.token_env);
  const routes = gatewayRoutes({ config, services, chatServices, routerChatServices, routerManagement, routing, routerState, storage, limits, upstream, webhooks, exec, roleOf, mcp, responses, filesServices, batches, dashboard, testing, clock, metricsScrapeToken });
  const sharedPort = options.shared !== undefined;
  const scrape = wireMetricsSurface({ uws, config, services, metrics, upstream, token: metricsScrapeToken, workerRpc, sharedPort, workerId: instances.id, logger });
  routes.push(...scrape.routes);
  const tracing = await openTracing(config, instances.id);
  const server = wireGatewayServer({ uws, config, routes, services, chatServices, agents: exec.agents, catalog, routing, backend, metrics, sharedPort, workerId: instances.id, tracing, logger, answerBarrier: chat.answerBarrier });
  // Before listening: what a stopped instance left dispatched fails (gateway_restarted) before any agent
  // can connect and be handed work that recovery would then fail.
  exec.execInvocations.start();
  const port = await server.listen(host, options.port ?? config.server.port);
  if (scrape.server !== null) await listenMetrics(scrape.server, config, host, logger);
  webhooks.start();
  exec.agents.start();
  routing.start();
  await batches.batches.start();
  const scheme = config.server.tls ? 'https' : 'http';
  const url = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  // A worker's own line; the main thread of `serve --workers N` says "switchboard listening" once all are up.
  logger.info({ url, region: config.server.region, production: config.server.production }, options.shared ? 'worker listening' : 'switchboard listening');
  const parts: StopParts = { config, logger, server, metricsServer: scrape.server, filesServices, batches, responses, exec, mcp, workerRpc, webhooks, routing, chat, limits, tracing, storage, busy, pool };
  let closing: Promise<void> | null = null;
  return {
    host,
    port,
    url,
    logger,
    close: () => (closing ??= stopGateway(parts)),
  };
}

/** Everything `stopGateway` closes. */
interface StopParts {
  readonly config: Config;
  readonly logger: Logger;
  readonly server: HttpServer;
  readonly metricsServer: HttpServer | null;
  readonly filesServices: FilesServices;
  readonly batches: BatchParts;
  readonly responses: ResponsesParts;
  readonly exec: ExecParts;
  readonly mcp: McpRoutes;
  readonly workerRpc: WorkerRpc | null;
  readonly webhooks: WebhookSystem;
  readonly routing: RouterSystem;
  readonly chat: ChatParts;
  readonly limits: LimitsParts;
  readonly tracing: Tracing | null;
  readonly storage: StoreParts;
  readonly busy: BusyStore;
  readonly pool: WorkerPool;
}

/** The stop order: the drain first, then each part before what it writes through, the instance's row and the store last. */
async function stopGateway(p: StopParts): Promise<void> {
  const { logger, server, exec, storage } = p;
  logger.info({ inFlight: server.inFlight }, 'draining');
  await server.drain(p.config.server.drain_timeout_ms);
  await p.metricsServer?.drain(0);
  // Uploads the drain cut off remove their temp files (or staged blobs) before the store closes.
  await p.filesServices.files.close();
  // Lines in flight finish and are recorded (each has its tier's deadline); no new line starts.
  await p.batches.batches.close();
  await p.responses.close();
  // The drain above let agents finish their running invocations (docs/exec.md "Graceful stop"), then
  // closed their sockets; what they reported, and the failure of what still ran at the deadline, is
  // written before the store closes. The lease timer is all that is left of the agents' side.
  await exec.execInvocations.settled();
  exec.agents.close();
  exec.execInvocations.close();
  p.mcp.close();
  await exec.schemas.close();
  p.workerRpc?.close();
  exec.workerPresence?.close();
  await p.webhooks.close();
  await p.routing.close();
  await p.chat.usage.close();
  p.limits.budgetSpend.close();
  await p.limits.coordination.close();
  await p.limits.usageStore.close();
  await p.chat.upstream.close();
  await p.chat.mediaFetcher.close();
  // The spans of the drained requests are exported before the process goes.
  await p.tracing?.close();
  storage.catalog.close();
  await p.pool.close();
  // Last: until its row is gone no sibling takes this instance's unfinished work.
  p.limits.instances.close();
  if (p.busy.busyDb !== storage.db) p.busy.busyDb.close();
  storage.db.close();
  await storage.backend.close();
  storage.store.discard();
  logger.info('stopped');
  flushLogger(logger);
}
