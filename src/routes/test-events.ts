/**
 * POST /__test/webhook-events: emits events into the outbox as a real emitter would, for API tests and
 * the webhook bench (which need events of families whose emitters have not landed yet). Exists only with
 * `testing.event_injection: true` (refused together with `server.production: true`) and SWITCHBOARD_TESTING=1
 * (main.ts), and answers loopback callers only.
 * Body: `{project, type, data?, count?}`; `type: "budget.threshold_reached"` takes the budget fields as `data`.
 */
import { z } from 'zod';
import type { BudgetThresholdEvent } from '../core/webhooks/envelope.js';
import { isEventType, type EventType } from '../core/webhooks/event-types.js';
import { GatewayError } from '../errors.js';
import type { RouteDef } from '../http/server.js';
import type { StoreOutbox } from '../store/webhooks/webhook-outbox.js';
import { loopbackOnly } from './ops.js';

const bodySchema = z.strictObject({
  project: z.string().min(1),
  type: z.string().refine(isEventType),
  data: z.record(z.string(), z.unknown()).default({}),
  count: z.number().int().min(1).max(100_000).default(1),
});

const budgetSchema = z.strictObject({
  projectId: z.string(),
  projectName: z.string(),
  alertId: z.string(),
  alertName: z.string(),
  threshold: z.number(),
  currentSpendCents: z.number(),
  budgetAmountCents: z.number(),
});

export function testEventRoutes(enabled: boolean, outbox: StoreOutbox): RouteDef[] {
  if (!enabled) return [];
  return [
    loopbackOnly({
      method: 'POST',
      pattern: '/__test/webhook-events',
      family: 'ops',
      auth: { kind: 'public' },
      handle: async ({ req, reply }) => {
        const parsed = bodySchema.safeParse(await req.json());
        if (!parsed.success) throw new GatewayError('invalid_body', { message: 'Send {project, type, data?, count?} with a known event type.' });
        const { project, data, count } = parsed.data;
        const type = parsed.data.type as EventType;
        let queued = 0;
        if (type === 'budget.threshold_reached') {
          const budget = budgetSchema.safeParse(data);
          if (!budget.success) throw new GatewayError('invalid_body', { param: 'data', message: 'Budget alerts need the BudgetThresholdEvent fields.' });
          const event: BudgetThresholdEvent = budget.data;
          for (let i = 0; i < count; i += 1) queued += outbox.emitBudgetThreshold(event);
        } else {
          queued = outbox.emitMany(project, type, count === 1 ? [data] : Array.from({ length: count }, (_, i) => ({ ...data, sequence: i })));
        }
        reply.json(200, { queued });
      },
    }),
  ];
}
