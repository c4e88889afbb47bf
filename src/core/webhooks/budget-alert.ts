/**
 * From a budget crossing its warning threshold (core/limits) to SPEC's legacy budget alert body.
 *
 * A money budget (a `*_cents` cap) reports real money: `currentSpendCents` is what the budget's window
 * cost, in whole US cents (halves up), from the prices configured on the endpoints; a turn of an endpoint
 * without prices costs 0; `budgetAmountCents` is the cap. A token budget has no money in it, so its alert
 * carries token counts in both fields, as it always has, and its name says "token budget" (README "Usage
 * and spend"). Both fields are always in one unit, so the body's `spendPercentage` is right either way.
 *
 * The alert id is stable per budget, window and unit, so a receiver can group repeated alerts of one
 * budget; a token budget keeps the id it had before money budgets existed.
 */
import type { BudgetThresholdEvent as LimitsThresholdEvent } from '../limits/budgets.js';
import type { BudgetThresholdEvent } from './envelope.js';

export function budgetAlertOf(event: LimitsThresholdEvent, projectName: string): BudgetThresholdEvent {
  const money = event.unit === 'cents';
  return {
    projectId: event.projectId,
    projectName,
    alertId: `budget_${event.level}_${event.targetId}_${event.window}${money ? '_spend' : ''}`,
    alertName: `${event.level} ${event.targetId} ${event.window} ${money ? 'spend' : 'token'} budget at ${event.thresholdPercent}%`,
    threshold: event.thresholdPercent,
    currentSpendCents: event.spent,
    budgetAmountCents: event.cap,
  };
}
