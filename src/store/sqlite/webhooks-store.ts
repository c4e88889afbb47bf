/**
 * The webhooks port on the instance's SQLite file: the endpoints written once for both backends
 * (webhooks/webhook-endpoints-store.ts) on a runner of `db`, the rest over the synchronous repos
 * (webhook-deliveries-repo.ts, webhook-outbox.ts, webhook-retention.ts). The dispatcher of a SQLite
 * gateway keeps calling the synchronous delivery repo itself (webhook-system.ts): its answers are used at
 * once, as before the port existed; `deliveryQueue` is the same repo behind promises.
 */
import type { WebhookDeliveryQueue, WebhooksStore } from '../../core/store/webhooks-store.js';
import type { Db } from '../db.js';
import type { SecretBox } from '../secret-box.js';
import { createSqliteRunner } from '../sql/sqlite-runner.js';
import { createDeliveriesRepo } from '../webhook-deliveries-repo.js';
import { createOutbox } from '../webhook-outbox.js';
import { createWebhookRetention } from '../webhook-retention.js';
import { createWebhookEndpointsStore } from '../webhooks/webhook-endpoints-store.js';

export interface SqliteWebhooksStoreOptions {
  readonly now: () => number;
  /** After an append queued deliveries (the dispatcher's wake-up). */
  readonly onEmitted?: () => void;
}

export function createSqliteWebhooksStore(db: Db, box: SecretBox, options: SqliteWebhooksStoreOptions): WebhooksStore {
  const outbox = createOutbox(db, { now: options.now, ...(options.onEmitted ? { onEmitted: options.onEmitted } : {}) });
  return {
    endpoints: createWebhookEndpointsStore({ runner: createSqliteRunner(db), box }),
    deliveryQueue(claimant): WebhookDeliveryQueue {
      const queue = createDeliveriesRepo(db, box, claimant);
      return {
        releaseAbandoned: async () => queue.releaseAbandoned(),
        renewClaims: async () => queue.renewClaims(),
        claimDue: async (now, limit, skip, pick) => queue.claimDue(now, limit, skip, pick),
        claimDueFor: async (webhookId, now, limit) => queue.claimDueFor(webhookId, now, limit),
        recordResults: async (results, now) => queue.recordResults(results, now),
      };
    },
    appendEvents: async (events) => events.reduce((queued, event) => queued + outbox.append(event), 0),
    prune: (now, retentionMs) => createWebhookRetention(db, retentionMs).prune(now),
  };
}
