/**
 * The webhook subsystem, assembled for the composition root (main.ts calls this once): the secret box,
 * the repositories, the outbox other modules emit through, the dedicated sender, the dispatcher and the
 * management use cases. The dispatcher writes on its own connection (synchronous=NORMAL: no fsync on the
 * event loop per outcome batch; see store/webhooks/webhook-delivery-queue.ts) unless the store is in memory.
 * Deliveries are claimed for this instance with the registry's lease, renewed at each of its heartbeats,
 * when claims of dead siblings are also given back (issue 12: each due delivery is sent by one instance).
 *
 * With `storage.kind: postgres` endpoints, events and deliveries live in PostgreSQL, shared by the
 * replicas (the same programs, store/webhooks/webhooks-store.ts, on PostgreSQL's runner), and deliveries are claimed under the leases of a registry
 * there (store/postgres/instances-registry.ts). Emitters still write their events into this instance's
 * SQLite file in their own transactions; the relay (core/webhooks/outbox-relay.ts) moves them over.
 * A replica that appends deliveries tells the others (a change notice), so their dispatchers look at once.
 */
import type { Config } from './config.js';
import type { ThrottlePort } from './core/coordination/throttle-port.js';
import type { WebhookEndpointsStore } from './core/store/webhooks-store.js';
import { createDispatcher, type Dispatcher, type DispatcherEvent, type DispatchStore } from './core/webhooks/dispatcher.js';
import { createOutboxRelay, type OutboxRelay } from './core/webhooks/outbox-relay.js';
import { webhookIds } from './core/webhooks/ids.js';
import { createWebhookManager, type WebhookManager } from './core/webhooks/webhook-manager.js';
import type { Logger } from './log.js';
import type { WorkerPool } from './pool/worker-pool.js';
import { eventLoopSibling, type Db } from './store/db.js';
import type { InstanceRegistry } from './store/instances-registry.js';
import { createPgInstanceRegistry, type PgInstanceRegistry } from './store/postgres/instances-registry.js';
import type { PgStore } from './store/postgres/pg-store.js';
import { loadSecretBox, storedSealedValues, type SecretBox } from './store/secret-box.js';
import { createPostgresRunner } from './store/sql/postgres-runner.js';
import { createSqliteRunner } from './store/sql/sqlite-runner.js';
import { WEBHOOK_DELIVERIES_TOPIC } from './store/webhooks/webhook-append.js';
import { createSqliteDispatchStore } from './store/webhooks/webhook-delivery-queue.js';
import { createOutbox, createRelaySource, type StoreOutbox } from './store/webhooks/webhook-outbox.js';
import { createWebhooksStore, newestSealedEndpoint } from './store/webhooks/webhooks-store.js';
import { checkOutboundUrl, outboundPolicyOf, type OutboundPolicy } from './upstream/outbound-guard.js';
import { outboundUserAgent } from './upstream/user-agent.js';
import { createWebhookSender } from './upstream/webhook-sender.js';
import { VERSION } from './version.js';

export interface WebhookSystem {
  readonly manager: WebhookManager;
  readonly outbox: StoreOutbox;
  readonly dispatcher: Dispatcher;
  /** The outbox on another connection to this instance's SQLite file (its writes in that connection's transactions). */
  outboxOn(db: Db): StoreOutbox;
  /**
   * This instance in PostgreSQL's registry of replicas (null with SQLite only): other shared work owned by
   * an instance (background responses, batch lines) is judged by the same rows. Closed by `close`.
   */
  readonly pgInstances: PgInstanceRegistry | null;
  /** Resumes deliveries left in flight by stopped instances, then polls. */
  start(): void;
  close(): Promise<void>;
}

export interface WebhookSystemOptions {
  readonly config: Config;
  readonly db: Db;
  readonly dbPath: string;
  readonly pool: WorkerPool;
  readonly now: () => number;
  readonly logger: Logger;
  readonly instances: InstanceRegistry;
  /** PostgreSQL, when `storage.kind` is postgres (store/backend.ts). */
  readonly pg: PgStore | null;
  /** The deployment's throttle counters (coordination.ts): test deliveries are counted there. */
  readonly throttles: ThrottlePort;
}

/**
 * How long shutdown waits for attempts in flight before cutting them: they are resent by a sibling once
 * this instance's row is gone (its close deletes it), or at the next start.
 */
const CLOSE_WAIT_MS = 2000;
const DAY_MS = 86_400_000;
const PRUNE_EVERY_MS = 3_600_000;
/**
 * A claim outlives its instance's lease: claims are renewed at every beat, and it is the registry that
 * decides an instance is dead (then its claims go back at once). Claim expiry is the backstop for claims
 * whose renewal failed while their instance went on beating; it must not fire first for an instance
 * merely late by a beat.
 */
const CLAIM_LEASES_PER_INSTANCE_LEASE = 2;

/** The parts that differ between the two stores. */
interface Backing {
  readonly endpoints: WebhookEndpointsStore;
  readonly dispatchStore: DispatchStore;
  newOutbox(db: Db, wake: () => void): StoreOutbox;
  readonly relay: OutboxRelay | null;
  prune(now: number, retentionMs: number): Promise<{ deliveries: number; events: number }>;
  readonly pgInstances: PgInstanceRegistry | null;
  /** Called once the dispatcher exists. */
  attach(dispatcher: Dispatcher): void;
  close(): void;
}

export async function createWebhookSystem(options: WebhookSystemOptions): Promise<WebhookSystem> {
  const { config, db, dbPath, pool, now, logger, instances } = options;
  const settings = config.webhooks;
  // The first load at start: a key that cannot open what the store holds stops the start here, before
  // listening. With PostgreSQL the endpoints' secrets are there: replicas need one key
  // (SWITCHBOARD_SECRET_KEY), and one that cannot open them is refused the same way.
  const sealed = options.pg ? [...storedSealedValues(db), ...(await createPostgresRunner(options.pg).read(newestSealedEndpoint('postgres')))] : storedSealedValues(db);
  const box = loadSecretBox(dbPath, sealed, process.env, options.pg ? `${dbPath} and the PostgreSQL database` : dbPath);
  const policy: OutboundPolicy = outboundPolicyOf(config.security);
  // The dispatcher enforces the per-endpoint share; several endpoints may share an origin, and undici must
  // not queue their requests behind its own per-origin cap (queue time would eat the attempt timeout).
  const sender = createWebhookSender({ policy, timeoutMs: settings.attempt_timeout_ms, connectionsPerOrigin: settings.max_in_flight, userAgent: outboundUserAgent(VERSION, config.media) });
  const sign = (items: readonly { secret: string; timestamp: number; body: string }[]) => pool.sign({ items });
  let wakeDispatcher = (): void => undefined;
  const backing = options.pg ? await postgresBacking(options.pg, box, options, () => wakeDispatcher()) : sqliteBacking(box, options, () => wakeDispatcher());

  const dispatcher = createDispatcher({
    store: backing.dispatchStore,
    sign,
    send: sender.send,
    now,
    retryScheduleMs: settings.retry_schedule_ms,
    maxInFlight: settings.max_in_flight,
    perWebhookInFlight: settings.per_endpoint_in_flight,
    pollMs: settings.poll_interval_ms,
    onEvent: (event) => logDispatcherEvent(logger, event),
  });
  wakeDispatcher = () => dispatcher.wake();
  backing.attach(dispatcher);
  const outbox = backing.newOutbox(db, wakeDispatcher);
  const manager = createWebhookManager({
    store: backing.endpoints,
    ids: webhookIds,
    checkUrl: (url) => checkOutboundUrl(url, policy),
    sign,
    send: sender.send,
    now,
    throttles: options.throttles,
  });

  // Retention: hourly, off the request path (small batches with the loop free between them).
  const retentionMs = settings.retention_days * DAY_MS;
  let pruning: Promise<unknown> = Promise.resolve();
  const prune = (): void => {
    pruning = backing.prune(now(), retentionMs).then(
      (n) => {
        if (n.deliveries + n.events > 0) logger.info({ deliveries: n.deliveries, events: n.events, retention_days: settings.retention_days }, 'webhooks: pruned history past its retention');
      },
      (err: unknown) => logger.error({ err }, 'webhooks: pruning history failed; will retry'),
    );
  };
  let pruneTimer: NodeJS.Timeout | null = null;
  let stopKeeping: (() => void) | null = null;

  return {
    manager,
    outbox,
    dispatcher,
    pgInstances: backing.pgInstances,
    outboxOn: (other) => (other === db ? outbox : backing.newOutbox(other, wakeDispatcher)),
    start: () => {
      dispatcher.start();
      stopKeeping = (backing.pgInstances ?? instances).onHeartbeat(() => dispatcher.keepClaims());
      backing.relay?.start();
      if (settings.retention_days > 0) {
        pruneTimer = setInterval(prune, PRUNE_EVERY_MS);
        pruneTimer.unref();
        setImmediate(prune);
      }
    },
    async close() {
      if (pruneTimer) clearInterval(pruneTimer);
      stopKeeping?.();
      await pruning;
      // Events emitted until now go over before the dispatcher stops; a sibling sends them.
      await backing.relay?.close();
      await dispatcher.close(CLOSE_WAIT_MS);
      await sender.close();
      // After the dispatcher: until this row is gone no sibling takes this instance's claims.
      await backing.pgInstances?.close();
      backing.close();
    },
  };
}

/** As before PostgreSQL: the dispatcher on the synchronous repo (its answers used at once), on its own connection. */
function sqliteBacking(box: SecretBox, options: WebhookSystemOptions, wake: () => void): Backing {
  const { db, dbPath, instances, now } = options;
  const dispatchDb = eventLoopSibling(db, dbPath);
  const store = createWebhooksStore({ runner: createSqliteRunner(db), box, onAppended: wake });
  return {
    endpoints: store.endpoints,
    dispatchStore: createSqliteDispatchStore(dispatchDb, box, { instanceId: instances.id, leaseMs: instances.leaseMs * CLAIM_LEASES_PER_INSTANCE_LEASE }),
    newOutbox: (on, onEmitted) => createOutbox(on, { now, onEmitted }),
    relay: null,
    prune: (at, retentionMs) => store.prune(at, retentionMs),
    pgInstances: null,
    attach: () => undefined,
    close: () => {
      if (dispatchDb !== db) dispatchDb.close();
    },
  };
}

/** Endpoints, events and deliveries in PostgreSQL; the SQLite outbox keeps events for the relay. */
async function postgresBacking(pg: PgStore, box: SecretBox, options: WebhookSystemOptions, wake: () => void): Promise<Backing> {
  const { db, instances, now, logger, config } = options;
  const store = createWebhooksStore({ runner: createPostgresRunner(pg), box });
  const pgInstances = await createPgInstanceRegistry(pg, {
    leaseMs: instances.leaseMs,
    onError: (message) => logger.error({ message }, 'instance registry failed'),
    onWarn: (message, fields) => logger.warn(fields, message),
  });
  logger.info({ instance: pgInstances.id, lease_ms: pgInstances.leaseMs }, 'webhooks: claiming deliveries in PostgreSQL as this instance');
  const relay = createOutboxRelay({
    source: createRelaySource(db),
    append: (events) => store.appendEvents(events),
    onAppended: wake,
    onError: (err) => logger.error({ err }, 'webhooks: relaying events to PostgreSQL failed; they stay in SQLite and are retried'),
    onRecovered: () => logger.info('webhooks: relaying events to PostgreSQL again'),
    pollMs: config.webhooks.poll_interval_ms,
  });
  let stopListening: (() => void) | null = null;
  return {
    endpoints: store.endpoints,
    dispatchStore: store.deliveryQueue({ instanceId: pgInstances.id, leaseMs: pgInstances.leaseMs * CLAIM_LEASES_PER_INSTANCE_LEASE }),
    newOutbox: (on) => createOutbox(on, { now, relay: true, onEmitted: () => relay.wake() }),
    relay,
    prune: (at, retentionMs) => store.prune(at, retentionMs),
    pgInstances,
    attach(dispatcher) {
      stopListening = pg.onChange(WEBHOOK_DELIVERIES_TOPIC, () => dispatcher.wake());
    },
    close: () => stopListening?.(),
  };
}

function logDispatcherEvent(logger: Logger, event: DispatcherEvent): void {
  if (event.kind === 'resumed') logger.info({ deliveries: event.count }, 'webhooks: resuming deliveries left in flight by a stopped instance');
  else if (event.kind === 'attempt') {
    const fields = { delivery_id: event.deliveryId, webhook_id: event.webhookId, attempt: event.attempt, http_status: event.httpStatus, error: event.error ?? undefined, state: event.state };
    if (event.ok) logger.info(fields, 'webhooks: delivery attempt succeeded');
    else logger.warn(fields, 'webhooks: delivery attempt failed');
  }
  else if (event.kind === 'failed_permanently') {
    logger.warn({ delivery_id: event.deliveryId, webhook_id: event.webhookId, error: event.error }, 'webhooks: delivery failed permanently');
  } else logger.error({ message: event.message }, 'webhooks: dispatcher error');
}
