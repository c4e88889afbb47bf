/**
 * The webhooks port (core/store/webhooks-store.ts), written once for SQLite and PostgreSQL (issue 33): the
 * endpoints (webhook-endpoints-store.ts), the delivery queue (webhook-delivery-queue.ts), the outbox's
 * append (webhook-append.ts) and the retention (webhook-retention.ts), each a set of programs the
 * backend's runner drives. The composition root picks the runner with the store's kind.
 *
 * On SQLite the dispatcher keeps calling the queue synchronously on its own connection
 * (webhook-delivery-queue.ts createSqliteDispatchStore), and emitters append through the file's own
 * outbox (webhook-outbox.ts); on PostgreSQL the queue is `deliveryQueue` and the emitters' events reach
 * `appendEvents` through the relay (core/webhooks/outbox-relay.ts) or a program's TransactionEvents.
 */
import type { WebhooksStore } from '../../core/store/webhooks-store.js';
import type { SecretBox, SealedValue } from '../secret-box.js';
import { LIMIT_ONE, sqlFor } from '../sql/sql-builder.js';
import { rows, type SqlDialect, type SqlProgram } from '../sql/sql-program.js';
import type { SqlRunner } from '../sql/sql-runner.js';
import { appendEvents, appendQueries } from './webhook-append.js';
import { createWebhookDeliveryQueue } from './webhook-delivery-queue.js';
import { createWebhookEndpointsStore } from './webhook-endpoints-store.js';
import { pruneWebhookHistory } from './webhook-retention.js';
import type { WebhooksTables } from './webhooks-tables.js';

export interface WebhooksStoreDeps {
  readonly runner: SqlRunner;
  readonly box: SecretBox;
  /**
   * After an append queued deliveries (SQLite: the dispatcher's wake-up; PostgreSQL's dispatchers hear
   * the change notice instead).
   */
  readonly onAppended?: () => void;
}

export function createWebhooksStore({ runner, box, onAppended }: WebhooksStoreDeps): WebhooksStore {
  const append = appendQueries(sqlFor<WebhooksTables>(runner.dialect).db, runner.dialect);
  return {
    endpoints: createWebhookEndpointsStore({ runner, box }),
    deliveryQueue: (claimant) => createWebhookDeliveryQueue(runner, box, claimant),
    async appendEvents(events) {
      if (events.length === 0) return 0;
      const queued = await runner.write(appendEvents(append, events));
      if (queued > 0) onAppended?.();
      return queued;
    },
    prune: (now, retentionMs) => pruneWebhookHistory(runner, now, retentionMs),
  };
}

/** The newest sealed signing secret, for the key check at start (secret-box.ts storedSealedValues). */
export function* newestSealedEndpoint(dialect: SqlDialect): SqlProgram<SealedValue[]> {
  const { db } = sqlFor<WebhooksTables>(dialect);
  return yield* rows(db.selectFrom('webhook_endpoints').select(['secret_sealed as sealed', 'id as associated']).orderBy('seq', 'desc').limit(LIMIT_ONE));
}
