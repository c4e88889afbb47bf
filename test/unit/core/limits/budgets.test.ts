import { describe, expect, it } from 'vitest';
import { budgetError } from '../../../../src/core/limits/budget-errors.js';
import { budgetWindowStarts, HARD_CAP_RETRY_AFTER_SECONDS, type BudgetCaps } from '../../../../src/core/limits/budget-caps.js';
import { Budgets, type BudgetThresholdEvent } from '../../../../src/core/limits/budgets.js';

const HOUR = 3_600_000;
const T0 = 1_700_000_000_000 - (1_700_000_000_000 % (24 * HOUR)) + 10 * HOUR; // 10:00 UTC on a day
const caps = (c: Partial<BudgetCaps>): BudgetCaps => ({ hourlyTokens: null, dailyTokens: null, hardCapTokens: null, ...c });

function withEvents(): { budgets: Budgets; events: BudgetThresholdEvent[] } {
  const budgets = new Budgets();
  const events: BudgetThresholdEvent[] = [];
  budgets.onBudgetThreshold((e) => events.push(e));
  return { budgets, events };
}

describe('Budgets', () => {
  it('says nothing while no budget is near its cap', () => {
    const { budgets } = withEvents();
    expect(budgets.check('p', 'e', 'ws_1', T0)).toBeNull();
    budgets.setConfigCaps('endpoint', 'p', 'e', caps({ hourlyTokens: 100 }));
    budgets.charge('p', 'e', 'ws_1', 79, T0);
    expect(budgets.check('p', 'e', 'ws_1', T0)).toBeNull();
  });

  it('warns at 80% and refuses once the cap is spent', () => {
    const { budgets } = withEvents();
    budgets.setConfigCaps('endpoint', 'p', 'e', caps({ hourlyTokens: 100 }));
    budgets.charge('p', 'e', null, 80, T0);
    expect(budgets.check('p', 'e', null, T0)).toEqual({ warning: 'endpoint:hourly', exhausted: null });
    budgets.charge('p', 'e', null, 20, T0);
    expect(budgets.check('p', 'e', null, T0 + 1000)).toEqual({
      warning: 'endpoint:hourly',
      exhausted: { level: 'endpoint', window: 'hourly', unit: 'tokens', cap: 100, spent: 100, resetsInSeconds: 3599, retryAfterSeconds: 3599 },
    });
  });

  it('resets the hourly and daily windows on the UTC hour and day', () => {
    const { budgets } = withEvents();
    budgets.setConfigCaps('workspace', 'p', 'ws_1', caps({ hourlyTokens: 10, dailyTokens: 15 }));
    budgets.charge('p', 'e', 'ws_1', 12, T0);
    expect(budgets.check('p', 'e', 'ws_1', T0)?.exhausted).toMatchObject({ level: 'workspace', window: 'hourly' });
    const nextHour = T0 + HOUR;
    expect(budgets.check('p', 'e', 'ws_1', nextHour)).toEqual({ warning: 'workspace:daily', exhausted: null });
    budgets.charge('p', 'e', 'ws_1', 5, nextHour);
    expect(budgets.check('p', 'e', 'ws_1', nextHour)?.exhausted).toMatchObject({ window: 'daily', retryAfterSeconds: 13 * 3600 });
    expect(budgets.check('p', 'e', 'ws_1', T0 + 14 * HOUR)).toBeNull();
  });

  it('names the endpoint first and waits for every spent budget', () => {
    const { budgets } = withEvents();
    budgets.setConfigCaps('endpoint', 'p', 'e', caps({ hourlyTokens: 10 }));
    budgets.setConfigCaps('workspace', 'p', 'ws_1', caps({ hardCapTokens: 10 }));
    budgets.charge('p', 'e', 'ws_1', 10, T0);
    expect(budgets.check('p', 'e', 'ws_1', T0)).toEqual({
      warning: 'endpoint:hourly, workspace:hardCap',
      exhausted: { level: 'endpoint', window: 'hourly', unit: 'tokens', cap: 10, spent: 10, resetsInSeconds: 3600, retryAfterSeconds: HARD_CAP_RETRY_AFTER_SECONDS },
    });
  });

  it('lets an API budget override the config file, and dropping it restores the file', () => {
    const { budgets } = withEvents();
    budgets.setConfigCaps('endpoint', 'p', 'e', caps({ hardCapTokens: 10 }));
    budgets.charge('p', 'e', null, 10, T0);
    expect(budgets.check('p', 'e', null, T0)?.exhausted).not.toBeNull();
    budgets.setApiCaps('endpoint', 'p', 'e', caps({ hardCapTokens: 1000 }));
    expect(budgets.check('p', 'e', null, T0)).toBeNull();
    expect(budgets.describe('endpoint', 'p', 'e', T0)).toEqual({
      caps: caps({ hardCapTokens: 1000 }),
      source: 'api',
      spend: { hourly: 10, daily: 10, total: 10 },
      spendNanos: { hourly: 0, daily: 0, total: 0 },
    });
    budgets.setApiCaps('endpoint', 'p', 'e', caps({}));
    expect(budgets.describe('endpoint', 'p', 'e', T0)).toMatchObject({ caps: caps({}), source: 'api' });
    budgets.setApiCaps('endpoint', 'p', 'e', undefined);
    expect(budgets.describe('endpoint', 'p', 'e', T0)).toMatchObject({ caps: caps({ hardCapTokens: 10 }), source: 'config' });
    expect(budgets.check('p', 'e', null, T0)?.exhausted?.window).toBe('hardCap');
  });

  it('tracks spend for targets without a budget, so a budget set later sees it', () => {
    const { budgets } = withEvents();
    budgets.charge('p', 'e', 'ws_1', 50, T0);
    budgets.setApiCaps('workspace', 'p', 'ws_1', caps({ dailyTokens: 50 }));
    expect(budgets.check('p', 'e', 'ws_1', T0)?.exhausted).toMatchObject({ level: 'workspace', window: 'daily' });
  });

  it('fires the threshold hook once per window when spend crosses 80%', () => {
    const { budgets, events } = withEvents();
    budgets.setConfigCaps('endpoint', 'p', 'e', caps({ hourlyTokens: 100, hardCapTokens: 1000 }));
    budgets.charge('p', 'e', null, 70, T0);
    expect(events).toEqual([]);
    budgets.charge('p', 'e', null, 15, T0 + 1);
    budgets.charge('p', 'e', null, 50, T0 + 2);
    expect(events).toEqual([
      { projectId: 'p', level: 'endpoint', targetId: 'e', window: 'hourly', unit: 'tokens', thresholdPercent: 80, spent: 85, cap: 100, spendPercentage: 85, windowStart: T0, at: T0 + 1 },
    ]);
    budgets.charge('p', 'e', null, 90, T0 + HOUR);
    expect(events.map((e) => e.window)).toEqual(['hourly', 'hourly']);
    budgets.charge('p', 'e', null, 600, T0 + HOUR + 1);
    expect(events.map((e) => `${e.window}:${e.spent}`)).toEqual(['hourly:85', 'hourly:90', 'hardCap:825']);
  });

  it('does not fire again after a restart for a threshold crossed before it', () => {
    const { budgets, events } = withEvents();
    budgets.setConfigCaps('endpoint', 'p', 'e', caps({ hardCapTokens: 100 }));
    budgets.loadSpend('endpoint', 'p', 'e', { hourly: 0, daily: 0, total: 90 }, T0);
    budgets.charge('p', 'e', null, 1, T0);
    expect(events).toEqual([]);
  });

  it('keeps charging when the threshold listener throws', () => {
    const budgets = new Budgets();
    const errors: unknown[] = [];
    budgets.onBudgetThreshold(() => {
      throw new Error('subscriber down');
    }, (err) => errors.push(err));
    budgets.setConfigCaps('endpoint', 'p', 'e', caps({ hourlyTokens: 10 }));
    expect(() => budgets.charge('p', 'e', null, 10, T0)).not.toThrow();
    expect(errors).toHaveLength(1);
    expect(budgets.check('p', 'e', null, T0)?.exhausted).not.toBeNull();
  });

  it('renders a spent budget as a 429 with retry_after and Retry-After', () => {
    const err = budgetError({ level: 'workspace', window: 'daily', unit: 'tokens', cap: 10, spent: 12, resetsInSeconds: 300, retryAfterSeconds: 300 });
    expect(err.status).toBe(429);
    expect(err.message).toBe("The workspace's daily token budget (10 tokens) is spent (12 used); it resets in 300 s.");
    expect(err.toEnvelope().error).toMatchObject({ code: 'workspace_budget_exhausted', retry_after: 300, retry_strategy: { type: 'fixed', initial_delay_ms: 300_000 } });
    expect(err.headers).toEqual({ 'Retry-After': '300' });
  });

  it('raises spend to the ledger where the ledger holds more, and never lowers it', () => {
    const { budgets, events } = withEvents();
    budgets.setConfigCaps('endpoint', 'p', 'e', caps({ hourlyTokens: 6000 }));
    budgets.loadSpend('endpoint', 'p', 'e', { hourly: 5016, daily: 5016, total: 5016 }, T0);
    // Another replica's 440 tokens reached the ledger, not this process; this process's 990 are not in it yet.
    budgets.charge('p', 'e', null, 990, T0 + 1);
    budgets.raiseSpend('endpoint', 'p', 'e', { hourly: 5456, daily: 5456, total: 5456 }, T0 + 2);
    expect(budgets.describe('endpoint', 'p', 'e', T0 + 2).spend).toEqual({ hourly: 6006, daily: 6006, total: 6006 });
    budgets.raiseSpend('endpoint', 'p', 'e', { hourly: 6446, daily: 6446, total: 6446 }, T0 + 3);
    expect(budgets.describe('endpoint', 'p', 'e', T0 + 3).spend).toEqual({ hourly: 6446, daily: 6446, total: 6446 });
    expect(budgets.check('p', 'e', null, T0 + 3)?.exhausted).toMatchObject({ window: 'hourly', spent: 6446 });
    // The ledger's alert was the other replica's to send; this one sent its own when its charge crossed 80%.
    expect(events).toHaveLength(0);
  });

  it('leaves a window alone that this process rolled past while the ledger was read', () => {
    const { budgets } = withEvents();
    budgets.charge('p', 'e', null, 10, T0 + HOUR);
    budgets.raiseSpend('endpoint', 'p', 'e', { hourly: 500, daily: 600, total: 700 }, T0);
    expect(budgets.describe('endpoint', 'p', 'e', T0 + HOUR).spend).toEqual({ hourly: 10, daily: 600, total: 700 });
  });

  it('marks a threshold the ledger crossed as sent, so a later charge here does not send it again', () => {
    const { budgets, events } = withEvents();
    budgets.setConfigCaps('endpoint', 'p', 'e', caps({ hourlyTokens: 100 }));
    budgets.raiseSpend('endpoint', 'p', 'e', { hourly: 85, daily: 85, total: 85 }, T0);
    budgets.charge('p', 'e', null, 5, T0 + 1);
    expect(events).toHaveLength(0);
  });

  it('computes the UTC hour and day starts used to rebuild spend', () => {
    expect(budgetWindowStarts(T0 + 1234)).toEqual({ hourStart: T0, dayStart: T0 - 10 * HOUR });
  });
});

describe('Budgets in money', () => {
  const CENT = 10_000_000; // nano-dollars

  it('warns at 80% of a cents cap and refuses once the recorded cost reaches it', () => {
    const { budgets } = withEvents();
    budgets.setConfigCaps('endpoint', 'p', 'e', caps({ dailyCents: 100 }));
    // Tokens alone never count against a money cap.
    budgets.charge('p', 'e', null, 1_000_000, T0, 79 * CENT);
    expect(budgets.check('p', 'e', null, T0)).toBeNull();
    budgets.charge('p', 'e', null, 1, T0, CENT);
    expect(budgets.check('p', 'e', null, T0)).toEqual({ warning: 'endpoint:daily', exhausted: null });
    budgets.charge('p', 'e', null, 1, T0, 20 * CENT + 4_999_999);
    expect(budgets.check('p', 'e', null, T0)).toEqual({
      warning: 'endpoint:daily',
      // 100.4999999 cents, rounded halves up to whole cents.
      exhausted: { level: 'endpoint', window: 'daily', unit: 'cents', cap: 100, spent: 100, resetsInSeconds: 14 * 3600, retryAfterSeconds: 14 * 3600 },
    });
    expect(budgets.describe('endpoint', 'p', 'e', T0).spendNanos).toEqual({ hourly: 100 * CENT + 4_999_999, daily: 100 * CENT + 4_999_999, total: 100 * CENT + 4_999_999 });
  });

  it('warns once for a window with both caps, and names the token cap first when both are spent', () => {
    const { budgets } = withEvents();
    budgets.setConfigCaps('workspace', 'p', 'ws_1', caps({ hourlyTokens: 10, hourlyCents: 10 }));
    budgets.charge('p', 'e', 'ws_1', 10, T0, 10 * CENT);
    expect(budgets.check('p', 'e', 'ws_1', T0)).toEqual({
      warning: 'workspace:hourly',
      exhausted: { level: 'workspace', window: 'hourly', unit: 'tokens', cap: 10, spent: 10, resetsInSeconds: 3600, retryAfterSeconds: 3600 },
    });
  });

  it('fires a money threshold event in cents, apart from the token one of the same window', () => {
    const { budgets, events } = withEvents();
    budgets.setConfigCaps('endpoint', 'p', 'e', caps({ hardCapTokens: 100, hardCapCents: 50 }));
    budgets.charge('p', 'e', null, 85, T0, 41 * CENT + 4_000_000);
    expect(events).toEqual([
      { projectId: 'p', level: 'endpoint', targetId: 'e', window: 'hardCap', unit: 'tokens', thresholdPercent: 80, spent: 85, cap: 100, spendPercentage: 85, windowStart: null, at: T0 },
      { projectId: 'p', level: 'endpoint', targetId: 'e', window: 'hardCap', unit: 'cents', thresholdPercent: 80, spent: 41, cap: 50, spendPercentage: 82.8, windowStart: null, at: T0 },
    ]);
    budgets.charge('p', 'e', null, 1, T0, CENT);
    expect(events).toHaveLength(2);
  });

  it('rebuilds money spend at start without firing for a threshold crossed before it', () => {
    const { budgets, events } = withEvents();
    budgets.setConfigCaps('endpoint', 'p', 'e', caps({ hardCapCents: 10 }));
    budgets.loadSpend('endpoint', 'p', 'e', { hourly: 0, daily: 0, total: 5 }, T0, { hourly: 0, daily: 0, total: 9 * CENT });
    budgets.charge('p', 'e', null, 1, T0, CENT / 2);
    expect(events).toEqual([]);
    budgets.charge('p', 'e', null, 1, T0, CENT / 2);
    expect(budgets.check('p', 'e', null, T0)?.exhausted).toMatchObject({ unit: 'cents', cap: 10, spent: 10 });
  });

  it('names the first spent budget with its own reset, and says when another spent one keeps the refusal longer', () => {
    const err = budgetError({ level: 'endpoint', window: 'hourly', unit: 'tokens', cap: 1, spent: 304, resetsInSeconds: 3, retryAfterSeconds: 3600 });
    expect(err.message).toBe("The endpoint's hourly token budget (1 tokens) is spent (304 used); it resets in 3 s, and another spent budget keeps requests refused for 3600 s.");
    expect(err.headers).toEqual({ 'Retry-After': '3600' });
  });

  it('says what a spent money budget was in dollars', () => {
    const err = budgetError({ level: 'endpoint', window: 'hardCap', unit: 'cents', cap: 500, spent: 512, resetsInSeconds: HARD_CAP_RETRY_AFTER_SECONDS, retryAfterSeconds: HARD_CAP_RETRY_AFTER_SECONDS });
    expect(err.toEnvelope().error).toMatchObject({ code: 'endpoint_budget_exhausted', retry_after: HARD_CAP_RETRY_AFTER_SECONDS });
    expect(err.message).toContain('hard-cap spend budget ($5.00) is spent ($5.12 used)');
  });
});
