/**
 * The usage ledger, plus the two consumers of the same per-turn event: the project's token limiter and the
 * endpoint and workspace budgets. Every turn ends in exactly one `record(row)` (app/chat/chat-dispatch.ts,
 * app/audio/audio-call.ts), so charging here charges each turn once, in process and at once (the SQL write
 * stays batched).
 *
 * This is also where a turn is priced: the endpoint's model and prices as configured now, at the moment of
 * the turn, are added to the row (README "Usage and spend"), so the routes never deal with money and the
 * stored cost never changes when prices change later.
 */
import type { Budgets } from '../core/limits/budgets.js';
import type { AdmissionPort } from '../core/coordination/admission-port.js';
import { turnCostNanos } from '../core/usage/cost.js';
import type { PricingLookup } from '../core/usage/pricing.js';
import type { LedgerRow, LedgerWriter, UsageLedger, UsageRow } from './usage-ledger.js';

/** SPEC Limits 3: prompt + completion - cached. */
export function countedTokens(row: Pick<UsageRow, 'promptTokens' | 'completionTokens' | 'cachedTokens'>): number {
  return Math.max(0, row.promptTokens + row.completionTokens - row.cachedTokens);
}

/** The row as stored. Every field named, in one order: one hidden class, one msgpack record shape. */
export function pricedRow(row: UsageRow, pricing: PricingLookup): LedgerRow {
  const endpoint = pricing(row.endpointId);
  return {
    requestId: row.requestId,
    projectId: row.projectId,
    workspaceId: row.workspaceId,
    endpointId: row.endpointId,
    keyId: row.keyId,
    route: row.route,
    promptTokens: row.promptTokens,
    completionTokens: row.completionTokens,
    cachedTokens: row.cachedTokens,
    reasoningTokens: row.reasoningTokens,
    serviceTier: row.serviceTier,
    tierMultiplier: row.tierMultiplier,
    status: row.status,
    usageSource: row.usageSource,
    latencyMs: row.latencyMs,
    createdAt: row.createdAt,
    model: endpoint?.model ?? null,
    costNanos: endpoint?.prices ? turnCostNanos(row, endpoint.prices) : null,
    ttftMs: row.ttftMs ?? null,
    errorCode: row.errorCode ?? null,
    upstreamServer: row.upstreamServer ?? null,
    retries: row.retries ?? null,
  };
}

/** `limiter`: an admission port of whichever kind (in process, shared memory, Redis); only its token charge is used here. */
export function chargingLedger(ledger: LedgerWriter, limiter: Pick<AdmissionPort, 'chargeTokens'>, budgets: Budgets, pricing: PricingLookup): UsageLedger {
  return {
    record(row) {
      const priced = pricedRow(row, pricing);
      ledger.record(priced);
      const tokens = countedTokens(row);
      limiter.chargeTokens(row.projectId, tokens, row.createdAt);
      budgets.charge(row.projectId, row.endpointId, row.workspaceId, tokens, row.createdAt, priced.costNanos ?? 0);
    },
    settle: () => ledger.settle(),
    journaled: () => ledger.journaled(),
    close: () => ledger.close(),
  };
}
