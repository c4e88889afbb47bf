/**
 * The config file's `prices` on endpoints and money caps on budgets (README "Usage and spend"): exact
 * decimal prices, per-second audio prices only on audio endpoints, and no money budget an endpoint could
 * never reach.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config.js';
import { pricingFromConfig } from '../../src/core/usage/pricing.js';

const ENDPOINT_ID = '1b4e28ba-2fa1-41d2-883f-0016d3cca427';

function config(endpoint: Record<string, unknown>, workspaceBudget?: Record<string, unknown>) {
  return {
    projects: [
      {
        id: 'proj_demo',
        slug: 'demo',
        workspaces: [{ id: 'ws_a1', name: 'Main', ...(workspaceBudget ? { budget: workspaceBudget } : {}) }],
        endpoints: [
          {
            id: ENDPOINT_ID,
            slug: 'chat',
            name: 'Chat',
            kind: 'chat',
            tier: 'gpu',
            model: { id: 'llama-3', context_window: 8192 },
            upstream: { base_url: 'http://127.0.0.1:9000/v1', model: 'llama-3' },
            ...endpoint,
          },
        ],
      },
    ],
  };
}

function refusal(raw: unknown): string {
  try {
    parseConfig(raw);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('expected a ConfigError, but the config parsed');
}

describe('endpoint prices', () => {
  it('accepts USD as YAML numbers or decimal strings, and gives the charging layer whole pico-dollars per token', () => {
    const parsed = parseConfig(config({ prices: { input_per_million: 0.15, cached_input_per_million: '0.075', output_per_million: 0.6 } }));
    expect(pricingFromConfig(parsed)(ENDPOINT_ID)).toEqual({ model: 'llama-3', prices: { input: 150_000, cachedInput: 75_000, output: 600_000, audio: null } });
    expect(pricingFromConfig(parseConfig(config({})))(ENDPOINT_ID)).toEqual({ model: 'llama-3', prices: null });
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['a price with more decimals than a pico-dollar a token', { prices: { input_per_million: 0.1234567 } }, 'prices.input_per_million: must be a non-negative decimal number of USD with at most 6 decimal places'],
    ['a negative price', { prices: { output_per_million: -1 } }, 'prices.output_per_million: must be a non-negative number of USD'],
    ['a price that is not a number', { prices: { output_per_million: 'free' } }, 'prices.output_per_million: must be a non-negative decimal number'],
    ['an empty prices block', { prices: {} }, 'prices: must set at least one price'],
    ['an unknown price', { prices: { input_per_1k: 1 } }, 'prices'],
    ['a per-second price on a chat endpoint', { prices: { audio_per_second: 0.0001 } }, 'prices.audio_per_second: applies to transcription, speech and realtime endpoints, not chat'],
    ['a money budget on an unpriced endpoint', { budget: { daily_cents: 100 } }, 'budget.daily_cents: needs prices on the endpoint'],
    ['a money cap of 0', { prices: { input_per_million: 1 }, budget: { hard_cap_cents: 0 } }, 'budget.hard_cap_cents'],
  ])('refuses %s, naming the field', (_name, endpoint, message) => {
    expect(refusal(config(endpoint))).toContain(`projects[0].endpoints[0].${message}`);
  });

  it('accepts per-second audio prices on audio endpoints and money budgets beside token budgets', () => {
    const parsed = parseConfig(
      config(
        { kind: 'transcription', prices: { audio_per_second: '0.0001', output_per_million: 10 }, budget: { daily_tokens: 1000, daily_cents: 500 } },
        { hourly_cents: 25 },
      ),
    );
    expect(pricingFromConfig(parsed)(ENDPOINT_ID)?.prices?.audio).toEqual({ pico: 10_000_000, side: 'prompt' });
    expect(parsed.projects[0]?.endpoints[0]?.budget).toEqual({ daily_tokens: 1000, daily_cents: 500 });
    expect(parsed.projects[0]?.workspaces[0]?.budget).toEqual({ hourly_cents: 25 });
  });
});
