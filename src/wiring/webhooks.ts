/** The webhook system (outbox, dispatcher, endpoints) and the budget alerts it delivers (SPEC "Budget alert deliveries"). */
import type { Config } from '../config.js';
import { budgetAlertOf } from '../core/webhooks/budget-alert.js';
import type { Logger } from '../log.js';
import type { WorkerPool } from '../pool/worker-pool.js';
import { createWebhookSystem, type WebhookSystem } from '../webhook-system.js';
import type { LimitsParts } from './limits.js';
import type { StoreParts } from './store.js';

export async function wireWebhooks(config: Config, storage: StoreParts, limits: LimitsParts, pool: WorkerPool, now: () => number, logger: Logger): Promise<WebhookSystem> {
  const { db, dbPath, backend, catalog } = storage;
  const webhooks = await createWebhookSystem({ config, db, dbPath, pool, now, logger, instances: limits.instances, pg: backend.pg, throttles: limits.coordination.throttles });
  // Thresholds are crossed by charging, which starts with the first turn, after this.
  limits.budgets.onBudgetThreshold(
    (event) => {
      logger.warn({ budget: event }, 'budget threshold reached');
      webhooks.outbox.emitBudgetThreshold(budgetAlertOf(event, catalog.project(event.projectId)?.name ?? event.projectId));
    },
    (err) => logger.error({ err }, 'budget threshold listener failed'),
  );
  return webhooks;
}
