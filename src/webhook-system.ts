/**
 * The webhook subsystem, assembled for the composition root (main.ts calls this once): the secret box,
 * the repositories, the outbox other modules emit through, the dedicated sender, the dispatcher and the
 * management use cases. The dispatcher writes on its own connection (synchronous=NORMAL: no fsync on the
 * event loop per outcome batch; see store/webhook-deliveries-repo.ts) unless the store is in memory.
 * Deliveries are claimed for this instance with the registry's lease, renewed at each of its heartbeats,
 * when claims of dead siblings are also given back (issue 12: each due delivery is sent by one instance).
 */
import type { Config } from './config.js';
import { createDispatcher, type Dispatcher, type DispatcherEvent } from './core/webhooks/dispatcher.js';
import { webhookIds } from './core/webhooks/ids.js';
import { createWebhookManager, type WebhookManager } from './core/webhooks/webhook-manager.js';
import type { Logger } from './log.js';
import type { WorkerPool } from './pool/worker-pool.js';
import { openDatabase, type Db } from './store/db.js';
import type { InstanceRegistry } from './store/instances-registry.js';
import { loadSecretBox, storedSealedValues } from './store/secret-box.js';
import { createDeliveriesList, createDeliveriesRepo } from './store/webhook-deliveries-repo.js';
import { createWebhookRetention } from './store/webhook-retention.js';
import { createOutbox, type StoreOutbox } from './store/webhook-outbox.js';
import { createWebhooksRepo } from './store/webhooks-repo.js';
import { checkOutboundUrl, outboundPolicyOf, type OutboundPolicy } from './upstream/outbound-guard.js';
import { createWebhookSender } from './upstream/webhook-sender.js';

export interface WebhookSystem {
  readonly manager: WebhookManager;
  readonly outbox: StoreOutbox;
  readonly dispatcher: Dispatcher;
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

export function createWebhookSystem(options: WebhookSystemOptions): WebhookSystem {
  const { config, db, dbPath, pool, now, logger, instances } = options;
  const settings = config.webhooks;
  // The first load at start: a key that cannot open what the store holds stops the start here, before listening.
  const box = loadSecretBox(dbPath, storedSealedValues(db));
  const policy: OutboundPolicy = outboundPolicyOf(config.security);
  // The dispatcher enforces the per-endpoint share; several endpoints may share an origin, and undici must
  // not queue their requests behind its own per-origin cap (queue time would eat the attempt timeout).
  const sender = createWebhookSender({ policy, timeoutMs: settings.attempt_timeout_ms, connectionsPerOrigin: settings.max_in_flight });
  const sign = (items: readonly { secret: string; timestamp: number; body: string }[]) => pool.sign({ items });
  const dispatchDb = dbPath === ':memory:' ? db : openDatabase(dbPath, 'NORMAL');

  const dispatcher = createDispatcher({
    store: createDeliveriesRepo(dispatchDb, box, { instanceId: instances.id, leaseMs: instances.leaseMs * CLAIM_LEASES_PER_INSTANCE_LEASE }),
    sign,
    send: sender.send,
    now,
    retryScheduleMs: settings.retry_schedule_ms,
    maxInFlight: settings.max_in_flight,
    perWebhookInFlight: settings.per_endpoint_in_flight,
    pollMs: settings.poll_interval_ms,
    onEvent: (event) => logDispatcherEvent(logger, event),
  });
  const outbox = createOutbox(db, { now, onEmitted: () => dispatcher.wake() });
  const deliveries = createDeliveriesList(db);
  const manager = createWebhookManager({
    store: { ...createWebhooksRepo(db, box), deliveries },
    ids: webhookIds,
    checkUrl: (url) => checkOutboundUrl(url, policy),
    sign,
    send: sender.send,
    now,
  });

  // Retention: hourly, off the request path (small batches with the loop free between them).
  const retention = settings.retention_days > 0 ? createWebhookRetention(db, settings.retention_days * DAY_MS) : null;
  let pruning: Promise<unknown> = Promise.resolve();
  const prune = (): void => {
    if (!retention) return;
    pruning = retention.prune(now()).then(
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
    start: () => {
      dispatcher.start();
      stopKeeping = instances.onHeartbeat(() => dispatcher.keepClaims());
      if (retention) {
        pruneTimer = setInterval(prune, PRUNE_EVERY_MS);
        pruneTimer.unref();
        setImmediate(prune);
      }
    },
    async close() {
      if (pruneTimer) clearInterval(pruneTimer);
      stopKeeping?.();
      await pruning;
      await dispatcher.close(CLOSE_WAIT_MS);
      await sender.close();
      if (dispatchDb !== db) dispatchDb.close();
    },
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
