/**
 * Delivery bodies. Every event type is sent in the SPEC "Event envelope" except the legacy budget alert,
 * whose flat body SPEC "Budget alert deliveries" fixes (no id, object or type). The body is serialized
 * once, at emission, and stored: every attempt to every subscriber sends (and signs) the same bytes.
 */
import type { EventType } from './event-types.js';

export interface EventEnvelope {
  readonly id: string;
  readonly object: 'event';
  readonly type: string;
  /** Unix seconds at emission. */
  readonly created_at: number;
  readonly data: Record<string, unknown>;
}

export function envelopeBody(id: string, type: string, createdAtMs: number, data: Record<string, unknown>): string {
  const envelope: EventEnvelope = { id, object: 'event', type, created_at: Math.floor(createdAtMs / 1000), data };
  return JSON.stringify(envelope);
}

/** What a budget crossing its warning threshold reports (SPEC "Budget alert deliveries"). */
export interface BudgetThresholdEvent {
  readonly projectId: string;
  readonly projectName: string;
  readonly alertId: string;
  readonly alertName: string;
  /** The warning threshold, in percent of the budget. */
  readonly threshold: number;
  readonly currentSpendCents: number;
  readonly budgetAmountCents: number;
}

export const BUDGET_THRESHOLD_TYPE: EventType = 'budget.threshold_reached';

export function budgetAlertBody(event: BudgetThresholdEvent, nowMs: number): string {
  const spendPercentage = event.budgetAmountCents > 0 ? Math.round((event.currentSpendCents / event.budgetAmountCents) * 10_000) / 100 : 0;
  return JSON.stringify({
    eventType: BUDGET_THRESHOLD_TYPE,
    alertId: event.alertId,
    alertName: event.alertName,
    projectId: event.projectId,
    projectName: event.projectName,
    threshold: event.threshold,
    currentSpendCents: event.currentSpendCents,
    budgetAmountCents: event.budgetAmountCents,
    spendPercentage,
    timestamp: new Date(nowMs).toISOString(),
  });
}
