/**
 * The usage ledger, plus the two consumers of the same per-turn event: the project's token limiter and the
 * endpoint and workspace budgets. Every turn ends in exactly one `record(row)` (routes/chat-dispatch.ts),
 * so charging here charges each turn once, in process and at once (the SQL write stays batched).
 */
import type { Budgets } from '../core/limits/budgets.js';
import type { RateLimiter } from '../core/limits/rate-limiter.js';
import type { UsageLedger, UsageRow } from './usage-ledger.js';

/** SPEC Limits 3: prompt + completion - cached. */
export function countedTokens(row: Pick<UsageRow, 'promptTokens' | 'completionTokens' | 'cachedTokens'>): number {
  return Math.max(0, row.promptTokens + row.completionTokens - row.cachedTokens);
}

export function chargingLedger(ledger: UsageLedger, limiter: RateLimiter, budgets: Budgets): UsageLedger {
  return {
    record(row) {
      ledger.record(row);
      const tokens = countedTokens(row);
      limiter.chargeTokens(row.projectId, tokens, row.createdAt);
      budgets.charge(row.projectId, row.endpointId, row.workspaceId, tokens, row.createdAt);
    },
    close: () => ledger.close(),
  };
}
