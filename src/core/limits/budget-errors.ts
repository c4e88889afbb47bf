/** The 429 of a spent budget (SPEC "Errors": endpoint_budget_exhausted, workspace_budget_exhausted). */
import type { GatewayError } from '../../errors.js';
import type { BudgetExhaustion } from './budgets.js';
import { retryStrategy, tooManyRequests } from './limit-headers.js';

const WINDOW_WORDS = { hourly: 'hourly', daily: 'daily', hardCap: 'hard-cap' } as const;

export function budgetError(e: BudgetExhaustion): GatewayError {
  const what = `The ${e.level}'s ${WINDOW_WORDS[e.window]} token budget (${e.capTokens} tokens) is spent (${e.spentTokens} used)`;
  const when = e.window === 'hardCap' ? 'it does not reset by itself; an operator can raise it' : `it resets in ${e.retryAfterSeconds} s`;
  return tooManyRequests(
    e.level === 'endpoint' ? 'endpoint_budget_exhausted' : 'workspace_budget_exhausted',
    `${what}; ${when}.`,
    e.retryAfterSeconds,
    retryStrategy('fixed', e.retryAfterSeconds),
  );
}
