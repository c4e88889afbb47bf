/**
 * The charging layer prices each turn as it is recorded (README "Usage and spend"): the row stored gets
 * the endpoint's model and exact cost, and the budgets are charged that cost beside the tokens.
 */
import { describe, expect, it } from 'vitest';
import { Budgets } from '../../../src/core/limits/budgets.js';
import { RateLimiter } from '../../../src/core/limits/rate-limiter.js';
import { turnPrices } from '../../../src/core/usage/cost.js';
import type { EndpointPricing } from '../../../src/core/usage/pricing.js';
import { chargingLedger, pricedRow } from '../../../src/store/charging-ledger.js';
import type { BilledRow, LedgerRow, UsageRow } from '../../../src/store/usage-ledger.js';

const T0 = 1_700_000_000_000;

const row = (endpointId: string, tierMultiplier = 1): UsageRow => ({
  requestId: 'chatcmpl-1',
  projectId: 'proj_a',
  workspaceId: 'ws_01',
  endpointId,
  keyId: 'key_1',
  route: 'chat',
  promptTokens: 1000,
  completionTokens: 500,
  cachedTokens: 200,
  reasoningTokens: null,
  serviceTier: tierMultiplier === 0.5 ? 'flex' : 'default',
  tierMultiplier,
  status: 'completed',
  usageSource: 'upstream',
  latencyMs: 1,
  createdAt: T0,
});

// The store's own test: a row as app/usage-row.ts would make it (the brand is a type, nothing at run time).
const billed = (r: UsageRow): BilledRow => r as BilledRow;

const endpoints = new Map<string, EndpointPricing>([
  ['priced', { model: 'acme/one', prices: turnPrices({ input_per_million: 2, cached_input_per_million: 1, output_per_million: 8 }, null) }],
  ['free', { model: 'acme/two', prices: null }],
]);
const pricing = (id: string): EndpointPricing | undefined => endpoints.get(id);

describe('the charging ledger', () => {
  it('stores each row with its model and cost at the moment of the turn', () => {
    expect(pricedRow(row('priced', 0.5), pricing)).toEqual({ ...row('priced', 0.5), model: 'acme/one', costNanos: 2_900_000, ttftMs: null, errorCode: null, upstreamServer: null, retries: null });
    expect(pricedRow(row('free'), pricing)).toMatchObject({ model: 'acme/two', costNanos: null });
    expect(pricedRow(row('unknown'), pricing)).toMatchObject({ model: null, costNanos: null });
  });

  it('charges the budgets the cost beside the tokens', () => {
    const stored: LedgerRow[] = [];
    const budgets = new Budgets();
    const ledger = chargingLedger({ record: (r) => stored.push(r), settle: () => undefined, journaled: async () => undefined, close: async () => undefined }, new RateLimiter(), budgets, pricing);
    ledger.record(billed(row('priced')));
    ledger.record(billed(row('free')));
    expect(stored.map((r) => r.costNanos)).toEqual([5_800_000, null]);
    expect(budgets.describe('workspace', 'proj_a', 'ws_01', T0)).toMatchObject({ spend: { total: 2600 }, spendNanos: { total: 5_800_000 } });
    expect(budgets.describe('endpoint', 'proj_a', 'free', T0)).toMatchObject({ spend: { total: 1300 }, spendNanos: { total: 0 } });
  });
});
