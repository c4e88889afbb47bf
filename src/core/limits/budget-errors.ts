/** The 429 of a spent budget (SPEC "Errors": endpoint_budget_exhausted, workspace_budget_exhausted). */
import type { GatewayError } from '../../errors.js';
import type { BudgetExhaustion } from './budget-caps.js';
import { retryStrategy, tooManyRequests } from './limit-headers.js';

const WINDOW_WORDS = { hourly: 'hourly', daily: 'daily', hardCap: 'hard-cap' } as const;

const dollars = (cents: number): string => `$${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;

export function budgetError(e: BudgetExhaustion): GatewayError {
  const what =
    e.unit === 'tokens'
      ? `The ${e.level}'s ${WINDOW_WORDS[e.window]} token budget (${e.cap} tokens) is spent (${e.spent} used)`
      : `The ${e.level}'s ${WINDOW_WORDS[e.window]} spend budget (${dollars(e.cap)}) is spent (${dollars(e.spent)} used)`;
  const own = e.window === 'hardCap' ? 'it does not reset by itself; an operator can raise it' : `it resets in ${e.resetsInSeconds} s`;
  // Retry-After covers every spent budget of the request; the message says so when another outlasts this one.
  const when = e.retryAfterSeconds > e.resetsInSeconds ? `${own}, and another spent budget keeps requests refused for ${e.retryAfterSeconds} s` : own;
  return tooManyRequests(
    e.level === 'endpoint' ? 'endpoint_budget_exhausted' : 'workspace_budget_exhausted',
    `${what}; ${when}.`,
    e.retryAfterSeconds,
    retryStrategy('fixed', e.retryAfterSeconds),
  );
}
