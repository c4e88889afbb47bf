/**
 * The webhooks port on the instance's SQLite file, over the synchronous repos (webhooks-repo.ts,
 * webhook-deliveries-repo.ts, webhook-outbox.ts, webhook-retention.ts). The dispatcher of a SQLite
 * gateway keeps calling the synchronous delivery repo itself (webhook-system.ts): its answers are used at
 * once, as before the port existed; `deliveryQueue` is the same repo behind promises.
 */
import type { WebhookDeliveryQueue, WebhooksStore } from '../../core/store/webhooks-store.js';
import type { Db } from '../db.js';
import type { SecretBox } from '../secret-box.js';
import { createDeliveriesList, createDeliveriesRepo, createRedeliver } from '../webhook-deliveries-repo.js';
import { createOutbox } from '../webhook-outbox.js';
import { createWebhookRetention } from '../webhook-retention.js';
import { createWebhooksRepo } from '../webhooks-repo.js';

export interface SqliteWebhooksStoreOptions {
  readonly now: () => number;
  /** After an append queued deliveries (the dispatcher's wake-up). */
  readonly onEmitted?: () => void;
}

export function createSqliteWebhooksStore(db: Db, box: SecretBox, options: SqliteWebhooksStoreOptions): WebhooksStore {
  const repo = createWebhooksRepo(db, box);
  const deliveries = createDeliveriesList(db);
  const redeliver = createRedeliver(db);
  const outbox = createOutbox(db, { now: options.now, ...(options.onEmitted ? { onEmitted: options.onEmitted } : {}) });
  return {
    endpoints: {
      insertCapped: async (record, secret, max) => repo.insertCapped(record, secret, max),
      get: async (projectId, id) => repo.get(projectId, id),
      secret: async (projectId, id) => repo.secret(projectId, id),
      list: async (projectId, limit, after) => repo.list(projectId, limit, after),
      update: async (projectId, id, patch, now) => repo.update(projectId, id, patch, now),
      delete: async (projectId, id) => repo.delete(projectId, id),
      deliveries: async (webhookId, limit, after) => deliveries(webhookId, limit, after),
      redeliver: async (webhookId, deliveryId, now) => redeliver(webhookId, deliveryId, now),
    },
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
