/**
 * Composition root: config -> store -> pool -> routes -> http.listen. Nothing else wires modules together.
 */
import { createControllableClock, systemClock } from './clock.js';
import { ConfigError, type Config } from './config.js';
import { Budgets } from './core/limits/budgets.js';
import { attachBus } from './coordination/bus-wiring.js';
import { createCoordination, type SharedCoordination } from './coordination/coordination.js';
import { createBroadcastPresence, presenceChannelName } from './coordination/broadcast-presence.js';
import { createWorkerRpc, workerRpcChannelName } from './coordination/worker-rpc.js';
import { workersMetrics } from './metrics-workers.js';
import { createHttpServer, type RouteDef } from './http/server.js';
import { loadUws, UwsFallbackError } from './http/uws.js';
import { accessLogOf } from './access-line.js';
import { createTracing } from './tracing/request-tracer.js';
import { createLogger, flushLogger, type Logger } from './log.js';
import { createMetrics } from './metrics.js';
import { createWorkerPool } from './pool/worker-pool.js';
import { createSchemaPool } from './pool/schema-pool.js';
import type { ChatServices } from './app/chat/chat-dispatch.js';
import { chatCompletionsRoutes } from './routes/chat-completions.js';
import { audioRoutes } from './routes/audio.js';
import { createMediaResolver } from './app/chat/chat-media.js';
import { createMediaFetcher } from './upstream/media-fetcher.js';
import { outboundPolicyOf } from './upstream/outbound-guard.js';
import { outboundUserAgent } from './upstream/user-agent.js';
import { VERSION } from './version.js';
import { realtimeHttpRoutes, realtimeRoutes, realtimeSettingsFrom } from './routes/realtime.js';
import { endpointsRoutes } from './routes/endpoints.js';
import { managementBudgetsRoutes } from './routes/management-budgets.js';
import { managementUsageRoutes } from './routes/management-usage.js';
import { pricingFromConfig } from './core/usage/pricing.js';
import { createUsageReader } from './store/usage-reader.js';
import { managementKeysRoutes } from './routes/management-keys.js';
import { modelsRoutes, routerModelsRoutes } from './routes/models.js';
import { embeddingsRoutes } from './routes/embeddings.js';
import { rerankRoutes } from './routes/rerank.js';
import { modelsApiRoutes } from './routes/models-api.js';
import { slosRoutes } from './routes/slos.js';
import { createPgRouterStore } from './store/postgres/router-store.js';
import { createSqliteRouterStore } from './store/sqlite/router-store.js';
import { notImplementedRoutes } from './routes/not-implemented.js';
import { allowedTargetsWarnings } from './core/net/address-policy.js';
import { metricsRoutes, opsRoutes, readyzRoute, TESTING_ENV, testClockRoutes, testingAllowed } from './routes/ops.js';
import type { Services } from './app/services.js';
import { createBudgetsRepo, restoreBudgetsFrom } from './store/budgets-repo.js';
import { createCatalog, createPreloadedCatalog, type Catalog, type PreloadedCatalog } from './store/catalog.js';
import { chargingLedger } from './store/charging-ledger.js';
import { syncConfig } from './store/config-sync.js';
import { openStoreBackend } from './store/backend.js';
import { markStoreKind } from './store/store-kind-mark.js';
import { isPostgresUnavailable } from './store/postgres/pg-errors.js';
import { GatewayError } from './errors.js';
import { openDatabase } from './store/db.js';
import { createDashboardAuth } from './dashboard/auth/dashboard-auth.js';
import { dashboardAssetRoutes, dashboardPages, endpointPrices } from './dashboard/pages/dashboard-pages.js';
import { peopleServices } from './dashboard/people-services.js';
import { playgroundRoutes } from './dashboard/playground/playground-routes.js';
import { createApprovalDecisions } from './app/approval-decisions.js';
import { createKeyManagement } from './app/key-management.js';
import { createRouterManagement } from './app/router-management.js';
import { resolveStorePath } from './store/store-path.js';
import { createKeysRepo } from './store/keys-repo.js';
import { createPgCatalogStore } from './store/postgres/catalog-store.js';
import { createSqliteCatalogStore } from './store/sqlite/catalog-store.js';
import { createStoreWriter } from './store/store-writer.js';
import { createUsageJournal, replayUsageJournal, replayUsageJournalInto } from './store/usage-journal.js';
import { BUDGETS_TOPIC, createPgUsageStore } from './store/postgres/usage-store.js';
import { createSqliteUsageStore } from './store/sqlite/usage-store.js';
import { createInstanceRegistry } from './store/instances-registry.js';
import { createUsageLedger } from './store/usage-ledger.js';
import { meteredLedger } from './store/metered-ledger.js';
import { createUpstreamClient } from './upstream/upstream-client.js';
import { webhooksRoutes } from './routes/webhooks.js';
import { testEventRoutes } from './routes/test-events.js';
import { createWebhookSystem } from './webhook-system.js';
import { budgetAlertOf } from './core/webhooks/budget-alert.js';
import { createRouterAdmin } from './router/router-admin.js';
import { createRouterSystem } from './router/router-system.js';
import { openRouterState } from './router/router-state.js';
import { managementSemanticRouterRoutes } from './routes/management-semantic-router.js';
import { managementWorkspacesRoutes } from './routes/management-workspaces.js';
import { semanticRouterChatRoutes } from './routes/semantic-router-chat.js';
import { multimodelRoutes } from './routes/multimodel.js';
import { createAgentsSystem } from './exec/agents/agents-system.js';
import { createPgExecPresence } from './store/postgres/exec-presence.js';
import { managementExecRoutes } from './routes/management-exec.js';
import { execAgentsConnectHttpRoutes, execAgentsConnectRoutes } from './routes/exec-agents-connect.js';
import { approvalPolicies, createExecInvocations } from './exec/invocations/exec-invocations.js';
import { createChatToolRunner } from './exec/invocations/chat-tool-runner.js';
import { execInvocationsRoutes } from './routes/exec-invocations.js';
import { execApprovalsRoutes } from './routes/exec-approvals.js';
import { execToolsRoutes } from './routes/exec-tools.js';
import { mcpRoutes } from './routes/mcp.js';
import { isLoopbackHost } from './mcp/origin-guard.js';
import { createResponsesSystem } from './routes/responses.js';
import type { RecoveryCue } from './core/coordination/recovery-cue.js';
import { conversationsRoutes } from './routes/conversations.js';
import { createSqliteResponsesStore } from './store/sqlite/responses-store.js';
import { createPgResponsesStore } from './store/postgres/responses-store.js';
import { filesRoutes } from './routes/files.js';
import { batchesRoutes } from './routes/batches.js';
import { createBatchLineRunner } from './routes/batch-line-runner.js';
import { createBatchSystem } from './batches/batch-system.js';
import { batchFilesOf } from './batches/batch-files.js';
import { BATCH_LINES_TOPIC, createBatchesStore } from './store/batches/batches-store.js';
import { createExecAgentsStore } from './store/exec-agents/exec-agents-store.js';
import { createIdentityStore } from './store/identity/identity-store.js';
import { createPostgresRunner } from './store/sql/postgres-runner.js';
import { createSqliteRunner } from './store/sql/sqlite-runner.js';
import { postgresTransactionEvents, sqliteTransactionEvents } from './store/sql/transaction-events.js';
import { uploadsRoutes } from './routes/uploads.js';
import { createPgFilesStore } from './store/postgres/files-store.js';
import { createSqliteFilesStore } from './store/sqlite/files-store.js';

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
  const { uws, native, binary } = loadUws();
  const allowFallback = config.server.allow_uws_fallback || process.env.SWITCHBOARD_ALLOW_UWS_FALLBACK === '1';
  if (!native && !allowFallback) throw new UwsFallbackError();
  if (native) logger.info({ binary }, 'uWebSockets.js: running on the native binary');
  else logger.warn('uWebSockets.js: running on the pure-JS fallback (allowed by the operator); expect far lower throughput');
  if (config.security.allow_private_targets || config.security.allow_http_targets) {
    logger.warn({ security: config.security }, 'outbound fetches may reach private addresses or plain HTTP: for local testing only');
  }
  for (const warning of allowedTargetsWarnings(config.security.allowed_targets)) logger.warn(warning);

  const store = resolveStorePath(options.dbPath ?? config.storage.path);
  const dbPath = store.path;
  const db = openDatabase(dbPath);
  // PostgreSQL too when storage.kind is postgres: the aggregates replicas share (store/backend.ts).
  const backend = await openStoreBackend(config.storage, logger);
  // So that `switchboard usage --db` on this file knows the ledger is elsewhere (store-kind-mark.ts).
  markStoreKind(db, backend.kind);
  // Into SQLite in both modes: the tables that stay in this instance's file refer to its projects.
  const synced = syncConfig(db, config, Date.now());
  logger.info({ db: dbPath, ...synced }, 'config synced into the store');
  // Projects, endpoints and keys: shared through PostgreSQL when the store is (issue 12).
  const catalogStore = backend.pg ? createPgCatalogStore(backend.pg) : createSqliteCatalogStore(db);
  let preloaded: PreloadedCatalog | null = null;
  if (backend.pg) {
    logger.info({ ...(await catalogStore.syncConfig(config, Date.now())) }, 'config synced into PostgreSQL');
    const { onChange } = backend.pg;
    preloaded = await createPreloadedCatalog({ store: catalogStore, onChange, onError: (err) => logger.error({ err }, 'catalog could not be reloaded from PostgreSQL; serving the last read') });
  }
  const catalog: Catalog = preloaded ?? createCatalog(db);
  const pool = createWorkerPool({ minThreads: config.pool.min_threads, maxThreads: config.pool.max_threads });
  await pool.whenReady();
  const metrics = createMetrics(() => pool.queueSize, () => pool.utilization);
  // The test hooks need SWITCHBOARD_TESTING=1 as well as their config flag (issue 31), and say so at every start.
  const testing = testingHooks(config, logger);
  const clock = testing.clock ? createControllableClock() : systemClock;
  if (clock.advance) logger.warn('testing.controllable_clock is on: POST /__test/clock (loopback callers only) can move time; never use this in production');
  // Limits and the bus: in this thread, shared by the worker threads, or in Redis (coordination.ts).
  const coordination = await createCoordination(config, logger, options.shared);
  const limits = coordination.admission;
  logger.info({ coordination: coordination.mode }, 'limits and bus coordination chosen');
  // This instance in the store's registry (issue 12): recovery, now and as siblings die, takes only the
  // work of instances that are gone, never a live sibling's.
  const instances = createInstanceRegistry({ dbPath, db, onError: (message) => logger.error({ message }, 'instance registry failed'), onWarn: (message, fields) => logger.warn(fields, message) });
  logger.info({ instance: instances.id, lease_ms: instances.leaseMs }, 'registered as a gateway instance of the store');
  // The usage ledger and the budget caps (issue 12): in PostgreSQL, shared by the replicas, or in this
  // instance's SQLite file, whose totals are read on a thread of their own (store/usage-reader.ts).
  const usageStore = backend.pg ? createPgUsageStore(backend.pg) : createSqliteUsageStore(db, { totals: createUsageReader(dbPath) });
  // Turns a killed instance had answered but not yet stored go in before the budgets are rebuilt from them.
  const replayJournal = async (): Promise<void> => {
    const replayed = backend.pg ? await replayUsageJournalInto(usageStore, dbPath, instances) : replayUsageJournal(db, dbPath, instances);
    if (replayed.segments > 0) logger.warn(replayed, 'usage journal: rows of a stopped process replayed into the ledger');
  };
  if (store.durable) {
    await replayJournal();
    instances.onSweep(() => void replayJournal().catch((err: unknown) => logger.error({ err }, 'usage journal replay failed; the next sweep tries again')));
  }
  const budgets = new Budgets();
  let storedBudgetCaps = await restoreBudgetsFrom(usageStore, config, budgets, clock.now());
  if (backend.pg) {
    // Caps another replica stored: reloaded on its notice (the last reload started wins).
    let reloads = 0;
    backend.pg.onChange(BUDGETS_TOPIC, () => {
      const reload = ++reloads;
      usageStore.listBudgets().then(
        (list) => {
          if (reload !== reloads) return;
          storedBudgetCaps = list;
          budgets.replaceApiCaps(list);
        },
        (err: unknown) => logger.error({ err }, 'budgets: reloading the stored caps failed'),
      );
    });
  }
  // What the bus reads when a sibling changed caps, synchronously: SQLite's table, or the caps PostgreSQL last sent.
  const budgetsRepo = backend.pg ? null : createBudgetsRepo(db);
  const storedCaps = () => budgetsRepo?.list() ?? storedBudgetCaps;
  budgets.onBudgetThreshold(
    (event) => {
      logger.warn({ budget: event }, 'budget threshold reached');
      // SPEC "Budget alert deliveries". Runs on charging, long after `webhooks` below is initialized.
      webhooks.outbox.emitBudgetThreshold(budgetAlertOf(event, catalog.project(event.projectId)?.name ?? event.projectId));
    },
    (err) => logger.error({ err }, 'budget threshold listener failed'),
  );
  // Router settings, rules, SLOs and model aliases: in memory from PostgreSQL when the store is shared.
  const routerState = await openRouterState(
    backend.pg ? createPgRouterStore(backend.pg) : createSqliteRouterStore(db),
    backend.pg ? null : db,
    (err) => logger.error({ err }, 'router state could not be reloaded; serving the last read'),
  );
  const modelAliases = routerState.aliases;
  const services: Services = { catalog, pool, metrics, logger, now: clock.now, isStoreOpen: () => db.open, storeHealth: backend.health, limits, budgets, modelAliases };
  // Every endpoint's pool of servers is built now, its API keys read from the environment once.
  const upstream = createUpstreamClient({
    projects: config.projects,
    now: clock.now,
    logger,
    onUpstreamError: (endpoint, cause) => metrics.upstreamError(endpoint.projectId, endpoint.slug, cause),
  });
  // Each turn's usage row also charges the token limiter and the budgets, once, as it is recorded.
  const ledgerError = (message: string): void => logger.error({ message }, 'usage ledger write failed; will retry');
  const journal = store.durable ? createUsageJournal(dbPath, instances.id, ledgerError) : null;
  // One writer thread for the usage ledger and the routing decision log (two users).
  const storeWriter = createStoreWriter({ path: dbPath, journalDir: journal?.dir ?? null, usagePgUrl: backend.pg ? (config.storage.url ?? null) : null }, 2);
  const ledger = createUsageLedger(storeWriter, journal, ledgerError);
  const usage = meteredLedger(chargingLedger(ledger, limits, budgets, pricingFromConfig(config)), metrics, catalog);
  const mediaFetcher = createMediaFetcher({
    policy: outboundPolicyOf(config.security),
    timeoutMs: config.media.fetch_timeout_ms,
    maxBytes: config.media.max_image_bytes,
    maxRedirects: config.media.max_redirects,
    userAgent: outboundUserAgent(VERSION, config.media),
  });
  const webhooks = await createWebhookSystem({ config, db, dbPath, pool, now: clock.now, logger, instances, pg: backend.pg });
  // Frequent state changes (invocations and agents, batch lines, responses, conversations) commit on a
  // connection of their own with synchronous=NORMAL: in WAL mode a commit still survives a process crash
  // (only a power loss can roll back the last ones), and no fsync runs on the event loop per change (the
  // exec bench measured commits of 135-254 ms under load on the FULL connection). Their events go through
  // an outbox on the same connection, so each stays in its state change's transaction.
  const busyDb = dbPath === ':memory:' ? db : openDatabase(dbPath, 'NORMAL');
  const busyOutbox = webhooks.outboxOn(busyDb);
  // The stores written once for both backends (issue 33) run their programs here, with their events.
  const busySql = backend.pg
    ? { runner: createPostgresRunner(backend.pg), events: postgresTransactionEvents(backend.pg) }
    : { runner: createSqliteRunner(busyDb), events: sqliteTransactionEvents(busyOutbox) };
  // And those whose changes are rare (users, sessions) on the main connection, synchronous=FULL.
  const mainSql = backend.pg ? busySql : { runner: createSqliteRunner(db), events: sqliteTransactionEvents(webhooks.outbox) };
  // Files and uploads (issue 14): bytes under the store's files/ folder, rows and file.* events in SQLite;
  // with PostgreSQL, rows, bytes and events there, shared by every replica.
  const files = backend.pg ? createPgFilesStore(backend.pg, clock.now) : createSqliteFilesStore(db, store.filesDir, webhooks.outbox, clock.now);
  const filesServices = { ...services, files, filesConfig: config.files };
  // What a crash left in PostgreSQL (staged bytes never committed) goes at start, as the disk store's leftovers do.
  if (backend.pg) files.sweepExpired().catch((err: unknown) => logger.error({ err }, 'files: sweeping leftovers failed; the next upload sweeps again'));
  // With PostgreSQL: the shared database and this replica's row in its registry of replicas, under which the
  // shared aggregates below own their running work, and whose beats cue the recovery of a gone sibling's.
  const shared = backend.pg && webhooks.pgInstances ? { pg: backend.pg, instances: webhooks.pgInstances } : null;
  const recoveryCue: RecoveryCue = shared?.instances ?? instances;
  // While Redis is down each replica admits at most its share of every limit: the replicas are counted
  // in the registry they all beat in (PostgreSQL's across hosts, the shared SQLite file's on one host).
  coordination.countReplicasWith?.(shared ? () => shared.instances.liveInstances() : () => instances.liveInstances());
  // Execution agents (docs/exec.md): `agents.registry` is the seam the invocations' side dispatches through.
  // Join keys and agents: with PostgreSQL shared by the replicas (an agent's socket is still held by one).
  const execAgentsStore = createExecAgentsStore(busySql);
  // Worker threads on SQLite: which worker holds which agent, over the launch's BroadcastChannel (issue 32).
  const workerPresence =
    !shared && options.shared ? createBroadcastPresence(presenceChannelName(options.shared.channel), instances.id, (id) => instances.isRegistered(id)) : null;
  if (workerPresence) instances.onSweep((sweep) => workerPresence.reaped(sweep.reaped));
  const execPresence = shared ? createPgExecPresence(shared.pg, shared.instances.id) : workerPresence;
  // Tool schemas are compiled, and arguments checked, on two schema threads of their own (issue 31).
  const schemas = createSchemaPool();
  const agents = createAgentsSystem({
    store: execAgentsStore,
    presence: execPresence,
    catalog,
    leaseMs: config.exec.lease_ms,
    now: clock.now,
    logger,
    checkSchemas: schemas.checkSchemas,
    enrollmentLimits: { perKey: config.exec.enrollments_per_minute_per_key, perProject: config.exec.enrollments_per_minute_per_project },
    throttles: coordination.throttles,
  });
  // Invocations and approvals (docs/exec.md): dispatch through `agents.registry`, which reports back to it.
  // With PostgreSQL, invocations and approvals are shared by the replicas (migration 009-exec).
  const execInvocations = createExecInvocations({ config, db: busyDb, outbox: busyOutbox, registry: agents.registry, argumentsValidator: schemas.validator, now: clock.now, logger, instances, shared });
  // Dashboard users and their roles (issue 22). With PostgreSQL, users and sessions are shared: a cookie
  // issued by one replica opens pages on every other. Approvals ask it who is an owner or admin.
  const identity = createIdentityStore(mainSql.runner);
  const roleOf = async (userId: string, projectId: string) => (await identity.users.roles(userId)).find((r) => r.projectId === projectId)?.role ?? null;
  // One set of approval decisions (docs/exec.md "Who decides") for the REST routes, MCP and the dashboard.
  const approvals = createApprovalDecisions(execInvocations.service, roleOf);
  const execServices = { ...services, exec: execInvocations.service, execDefaultTimeoutMs: config.exec.default_timeout_ms, approvals };
  // The chat tool bridge (x_exec, docs/exec.md "Chat tool bridge") runs tools through the same invocations service.
  const execTools = createChatToolRunner({ service: execInvocations.service, registry: agents.registry, policyOf: approvalPolicies(config), timeoutMs: config.exec.default_timeout_ms });
  const chatServices: ChatServices = {
    ...services,
    upstream,
    usage,
    timeouts: config.timeouts,
    features: config.features,
    media: createMediaResolver(mediaFetcher, config.media),
    execTools,
  };
  const routing = createRouterSystem({ config, db, dbPath, state: routerState, storeWriter, pool, upstream, catalog, now: clock.now, logger });
  // Caches, budget charges and affinity kept right across workers or replicas (nothing with one process).
  attachBus(coordination.bus, { catalog, routerSettings: routing.settings, affinity: routing.affinity, budgets, storedBudgetCaps: storedCaps });
  // Batches (issue 14): lines run through the live routes' handlers, at most batches.concurrency at once.
  // With PostgreSQL, batches and their lines are shared: every replica may claim a line (once), under its row in
  // the shared instance registry, and hears when another validated a batch (no wait for its minute sweep).
  const batchesRepo = createBatchesStore({ ...busySql, owner: shared ? shared.instances.id : instances.id });
  const batchFiles = batchFilesOf(filesServices.files);
  const keysRepo = createKeysRepo(db);
  // A line runs under its key as stored now: PostgreSQL's are all in the catalog's memory.
  const findBatchKey = preloaded ? preloaded.keyInProject : keysRepo.findInProject;
  const batches = createBatchSystem({
    repo: batchesRepo,
    files: batchFiles,
    runner: createBatchLineRunner(chatServices, (projectId, keyId) => findBatchKey(projectId, keyId)),
    concurrency: config.batches.concurrency,
    maxLines: config.batches.max_lines,
    now: clock.now,
    logger,
    instances: recoveryCue,
    ...(shared
      ? {
          linesReady: {
            announce: () => void shared.pg.notifyChange(shared.pg.pool, BATCH_LINES_TOPIC).catch((err: unknown) => logger.warn({ err }, 'batches: telling the replicas that lines are ready failed; they find them at their next sweep')),
            listen: (fn: () => void) => shared.pg.onChange(BATCH_LINES_TOPIC, fn),
          },
        }
      : {}),
  });
  if (testing.events) logger.warn('testing.event_injection is on: POST /__test/webhook-events (loopback callers only) can emit events; never use this in production');

  // Responses and conversations (issue 14): rows, conversation items and their events, shared in PostgreSQL
  // (owned by this instance's row in its registry, whose beats cue the recovery of a dead sibling's), or in
  // SQLite on the busy connection with its outbox.
  const responsesStore = shared ? createPgResponsesStore(shared.pg, { owner: shared.instances.id, now: clock.now }) : createSqliteResponsesStore(busyDb, busyOutbox, instances.id);
  // The MCP server (docs/mcp.md): the execution tools over MCP, through the same invocations service.
  const mcpOrigins = { allowedHosts: config.exec.mcp_allowed_hosts, allowedOrigins: config.exec.mcp_allowed_origins, listensOnLoopback: isLoopbackHost(options.host ?? config.server.host) };
  const sessionCaps = config.exec.mcp_sessions;
  const mcpSessionLimits = { maxPerKey: sessionCaps.per_key, maxPerProject: sessionCaps.per_project, maxSessions: sessionCaps.total };
  // Worker threads ask each other (issue 32): an MCP session's owner, every worker's metrics for a scrape.
  const workerRpc = options.shared ? createWorkerRpc(workerRpcChannelName(options.shared.channel), options.shared.workerIndex, options.shared.workers) : null;
  const mcp = mcpRoutes({ ...execServices, agents: agents.registry, mcpOrigins, maxBodyBytes: config.server.max_body_bytes, mcpSessionLimits, workerRpc });
  const routerChatServices = { ...chatServices, router: routing.router, decisionLog: routing.decisionLog, routerId: routing.routerId };
  // Background responses fail "interrupted" if a stopped instance left any running (docs/decisions.md).
  const responses = await createResponsesSystem({ ...routerChatServices, ...responsesStore }, recoveryCue);
  // Dashboard sign-in (issue 22): users, sessions, CSRF; `dashboardAuth.dashboardRoute` guards every page.
  const dashboardAuth = await createDashboardAuth({ config, db, dbPath, identity, shared: backend.pg !== null, now: clock.now, throttles: coordination.throttles, reloadCredentials: () => catalog.reload() });
  // The semantic-router management API and the dashboard's router page run one set of use cases (src/app/).
  const routerManagement = {
    ...services,
    router: routing.router,
    admin: createRouterAdmin(catalog, routing.settings, clock.now),
    decisions: routing.decisions,
    decisionLog: routing.decisionLog,
    defaults: routing.defaults,
    routerId: routing.routerId,
    upstream,
    slos: routing.slos,
  };
  // Operator pages (issue 22): the same use cases as the management API, behind the session guard.
  const dashboardPageDeps = {
    catalog,
    now: clock.now,
    keys: createKeyManagement({ keys: catalogStore, catalog, now: clock.now }),
    router: createRouterManagement(routerManagement),
    webhooks: webhooks.manager,
    usage: usageStore,
    approvals,
    // Approvals by name and the members page (issue 34).
    ...peopleServices({ users: identity.users, keys: catalogStore, exec: execInvocations.service, agents, now: clock.now, reloadCredentials: () => catalog.reload() }),
    decisions: routing.decisions,
    upstreamReport: (projectId: string) => upstream.report(projectId),
    pricesOf: endpointPrices(config),
    aliases: modelAliases,
  };
  // Read once, at start: it guards /metrics and /readyz's detail.
  const metricsScrapeToken = metricsToken(config.server.metrics.token_env);
  const implemented: RouteDef[] = [
    ...opsRoutes(services, { token: metricsScrapeToken, always: false }, upstream),
    ...testClockRoutes(clock),
    ...modelsRoutes(services),
    ...endpointsRoutes(services),
    ...chatCompletionsRoutes(chatServices),
    ...semanticRouterChatRoutes({ ...chatServices, router: routing.router, decisionLog: routing.decisionLog, routerId: routing.routerId }),
    ...multimodelRoutes(routerChatServices),
    ...routerModelsRoutes({ ...services, router: routing.router }),
    ...embeddingsRoutes(chatServices),
    ...rerankRoutes(chatServices),
    ...modelsApiRoutes({ ...services, modelAliases }),
    ...slosRoutes({ ...services, slos: routing.slos }),
    ...managementSemanticRouterRoutes(routerManagement),
    ...managementWorkspacesRoutes({ ...services, workspaceRouting: routing.workspaces }),
    ...audioRoutes({ ...chatServices, audio: config.audio }),
    ...realtimeHttpRoutes(chatServices),
    ...managementKeysRoutes({ ...services, keys: catalogStore }),
    ...managementBudgetsRoutes({ ...services, budgetStore: usageStore }),
    ...managementUsageRoutes({ ...services, usageReader: usageStore }),
    ...webhooksRoutes({ ...services, webhooks: webhooks.manager }),
    ...testEventRoutes(testing.events, webhooks.outbox),
    ...managementExecRoutes({ ...services, agentsAdmin: agents.admin, agentRegistry: agents.registry }),
    ...execAgentsConnectHttpRoutes(agents),
    ...execInvocationsRoutes(execServices),
    ...execApprovalsRoutes(execServices),
    ...execToolsRoutes({ ...services, agents: agents.registry }),
    ...mcp.routes,
    ...responses.routes,
    ...conversationsRoutes({ ...services, conversations: responsesStore.conversations }),
    ...filesRoutes(filesServices),
    ...batchesRoutes({ ...services, batches, batchesRepo, batchFiles }),
    ...uploadsRoutes(filesServices),
    ...dashboardAuth.routes,
    ...dashboardPages(dashboardPageDeps).map((page) => dashboardAuth.dashboardRoute(page)),
    ...dashboardAssetRoutes(),
    // The chat playground (issue 23): turns through the chat use cases above, as the signed-in user.
    ...playgroundRoutes({ pages: dashboardPageDeps, services: routerChatServices, guard: dashboardAuth.dashboardRoute, maxBodyBytes: config.server.max_body_bytes }),
  ];
  const metricsConfig = config.server.metrics;
  const scrape = metricsRoutes(services, metricsScrapeToken, workerRpc ? workersMetrics(metrics.registry, workerRpc) : undefined);
  // With a port of its own, /metrics is served there only (a scrape network apart from client traffic),
  // and /readyz there answers with its detail (upstream servers, dependencies) to every caller.
  const metricsServer =
    metricsConfig.port === undefined
      ? null
      : createHttpServer({
          uws,
          routes: [...scrape, readyzRoute(services, { token: metricsScrapeToken, always: true }, upstream)],
          maxBodyBytes: 0,
          production: false,
          trustProxy: false,
          // Every worker listens on it (the launcher picked one port for `port: 0`); a scrape on any gets the whole process.
          sharedPort: options.shared !== undefined,
          workerId: instances.id,
          onComplete: () => undefined,
          onUnexpectedError: (err) => logger.error({ err }, 'metrics listener: unexpected error'),
        });
  if (metricsServer === null) implemented.push(...scrape);
  const accessLog = accessLogOf(logger);
  // Null with tracing off (the default): then no request gets a trace.
  const tracing = createTracing(config.tracing, { version: VERSION, instanceId: instances.id, headers: envValues(config.tracing.headers_env, 'tracing.headers_env') });
  const server = createHttpServer({
    uws,
    routes: [...implemented, ...notImplementedRoutes(services, implemented)],
    ws: {
      routes: [
        ...realtimeRoutes({ ...chatServices, realtimeSettings: realtimeSettingsFrom(new Map(config.projects.flatMap((p) => p.endpoints.map((e) => [e.id, e.realtime] as const)))) }),
        ...execAgentsConnectRoutes(agents),
      ],
      maxPayloadBytes: config.audio.realtime_max_message_bytes,
    },
    maxBodyBytes: config.server.max_body_bytes,
    production: config.server.production,
    trustProxy: config.server.trust_proxy,
    tls: config.server.tls,
    sharedPort: options.shared !== undefined,
    // New at every start and distinct per worker thread (each runs startGateway): docs/decisions.md.
    workerId: instances.id,
    tracer: tracing?.tracer ?? null,
    onStart: (family) => metrics.requestStarted(family),
    logClientAddress: logger.isLevelEnabled('info'),
    // A management or dashboard request that needed PostgreSQL while it is down: 503, logged, not a bug.
    nameDependencyError: (err, req) => {
      if (backend.pg === null || !isPostgresUnavailable(err)) return null;
      logger.warn({ err, request_id: req.requestId, path: req.path }, 'storage: PostgreSQL unreachable; answered 503 store_unavailable');
      return new GatewayError('store_unavailable');
    },
    onUnexpectedError: (err, where, req) => {
      metrics.unexpectedError(where);
      logger.error({ err, where, request_id: req?.requestId, method: req?.method, path: req?.path }, 'unexpected error');
    },
    onComplete: (done) => {
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
    },
  });
  const host = options.host ?? config.server.host;
  // Before listening: what a stopped instance left dispatched fails (gateway_restarted) before any agent
  // can connect and be handed work that recovery would then fail.
  execInvocations.start();
  const port = await server.listen(host, options.port ?? config.server.port);
  if (metricsServer !== null) {
    const metricsHost = metricsConfig.host ?? host;
    const metricsPort = await metricsServer.listen(metricsHost, metricsConfig.port ?? 0);
    logger.info({ url: `http://${metricsHost.includes(':') ? `[${metricsHost}]` : metricsHost}:${metricsPort}/metrics` }, 'metrics listening');
  }
  webhooks.start();
  agents.start();
  routing.start();
  await batches.start();
  const scheme = config.server.tls ? 'https' : 'http';
  const url = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  // A worker's own line; the main thread of `serve --workers N` says "switchboard listening" once all are up.
  logger.info({ url, region: config.server.region, production: config.server.production }, options.shared ? 'worker listening' : 'switchboard listening');

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
        await metricsServer?.drain(0);
        // Uploads the drain cut off remove their temp files (or staged blobs) before the store closes.
        await files.close();
        // Lines in flight finish and are recorded (each has its tier's deadline); no new line starts.
        await batches.close();
        await responses.close();
        // The drain above let agents finish their running invocations (docs/exec.md "Graceful stop"), then
        // closed their sockets; what they reported, and the failure of what still ran at the deadline, is
        // written before the store closes. The lease timer is all that is left of the agents' side.
        await execInvocations.settled();
        agents.close();
        execInvocations.close();
        mcp.close();
        await schemas.close();
        workerRpc?.close();
        workerPresence?.close();
        await webhooks.close();
        await routing.close();
        await usage.close();
        await coordination.close();
        await usageStore.close();
        await upstream.close();
        await mediaFetcher.close();
        // The spans of the drained requests are exported before the process goes.
        await tracing?.close();
        catalog.close();
        await pool.close();
        // Last: until its row is gone no sibling takes this instance's unfinished work.
        instances.close();
        if (busyDb !== db) busyDb.close();
        db.close();
        await backend.close();
        store.discard();
        logger.info('stopped');
        flushLogger(logger);
      })();
      return closing;
    },
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

/** The scrape token, read once at start: a named variable that is not set is a configuration error. */
/**
 * Which `testing:` hooks are on: those the config sets, and only with SWITCHBOARD_TESTING=1 in the
 * environment; a flag set without it is ignored, and the log says so at start.
 */
function testingHooks(config: Config, logger: Logger): { clock: boolean; events: boolean } {
  const { controllable_clock: clock, event_injection: events } = config.testing;
  if ((clock || events) && !testingAllowed(process.env)) {
    logger.warn({ testing: config.testing }, `testing: flags are set but ${TESTING_ENV}=1 is not: the test hooks (/__test/...) are off`);
    return { clock: false, events: false };
  }
  return { clock, events };
}

function metricsToken(name: string | undefined): string | null {
  if (name === undefined) return null;
  const value = process.env[name];
  if (!value) throw new ConfigError(`server.metrics.token_env: the environment variable ${name} is not set (or empty); /metrics would be open`);
  return value;
}
