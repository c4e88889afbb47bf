/**
 * From a budget crossing its warning threshold (core/limits) to SPEC's legacy budget alert body. The
 * gateway meters budgets in tokens and knows no prices, so `currentSpendCents` and `budgetAmountCents`
 * carry token counts and the alert name says so (docs/decisions.md). The alert id is stable per budget
 * and window, so a receiver can group repeated alerts of one budget.
 */
import type { BudgetThresholdEvent as LimitsThresholdEvent } from '../limits/budgets.js';
import type { BudgetThresholdEvent } from './envelope.js';

export function budgetAlertOf(event: LimitsThresholdEvent, projectName: string): BudgetThresholdEvent {
  return {
    projectId: event.projectId,
    projectName,
    alertId: `budget_${event.level}_${event.targetId}_${event.window}`,
    alertName: `${event.level} ${event.targetId} ${event.window} token budget at ${event.thresholdPercent}%`,
    threshold: event.thresholdPercent,
    currentSpendCents: event.spentTokens,
    budgetAmountCents: event.capTokens,
  };
}
