/**
 * The outbox API other modules emit events through (ARCHITECTURE "State": events go to the webhook outbox
 * in the same transaction as the state they describe). `emit` must be called on the store connection the
 * caller's transaction runs on, inside that transaction: the event and its deliveries commit or roll back
 * with the state change. Emitting outside a transaction is atomic on its own.
 */
import type { BudgetThresholdEvent } from './envelope.js';
import type { EventType } from './event-types.js';

export interface EventOutbox {
  /**
   * Writes the event (enveloped) and one pending delivery per active endpoint of the project subscribed
   * to `type`. Reserved types and events without subscribers write nothing. Returns the deliveries queued.
   */
  emit(projectId: string, type: EventType, data: Record<string, unknown>): number;
  /** SPEC "Budget alert deliveries": the legacy flat body, delivered to `budget.threshold_reached` subscribers. */
  emitBudgetThreshold(event: BudgetThresholdEvent): number;
}
