/**
 * SPEC "Budget alert deliveries" from a budget's threshold event: real cents for a money budget, token
 * counts (the legacy meaning) for a token budget; both fields always in one unit.
 */
import { describe, expect, it } from 'vitest';
import type { BudgetThresholdEvent } from '../../../../src/core/limits/budgets.js';
import { budgetAlertOf } from '../../../../src/core/webhooks/budget-alert.js';
import { budgetAlertBody } from '../../../../src/core/webhooks/envelope.js';

const event = (unit: 'tokens' | 'cents', spent: number, cap: number): BudgetThresholdEvent => ({
  projectId: 'proj_a',
  level: 'endpoint',
  targetId: 'ep-1',
  window: 'daily',
  unit,
  thresholdPercent: 80,
  spent,
  cap,
  spendPercentage: Math.round((spent / cap) * 10_000) / 100,
  windowStart: 0,
  at: 0,
});

describe('budgetAlertOf', () => {
  it('carries the real spend and the cap in cents for a money budget', () => {
    const alert = budgetAlertOf(event('cents', 412, 500), 'Project A');
    expect(alert).toEqual({
      projectId: 'proj_a',
      projectName: 'Project A',
      alertId: 'budget_endpoint_ep-1_daily_spend',
      alertName: 'endpoint ep-1 daily spend budget at 80%',
      threshold: 80,
      currentSpendCents: 412,
      budgetAmountCents: 500,
    });
    expect(JSON.parse(budgetAlertBody(alert, 0))).toMatchObject({ currentSpendCents: 412, budgetAmountCents: 500, spendPercentage: 82.4 });
  });

  it('carries token counts for a token budget, under the id it always had', () => {
    expect(budgetAlertOf(event('tokens', 850, 1000), 'Project A')).toMatchObject({
      alertId: 'budget_endpoint_ep-1_daily',
      alertName: 'endpoint ep-1 daily token budget at 80%',
      currentSpendCents: 850,
      budgetAmountCents: 1000,
    });
  });
});
