/**
 * The cost arithmetic (core/usage/cost.ts): prices read exactly as written, integer pico-dollars per token,
 * the service-tier multiplier as an exact fraction, and one rounding per turn to whole nano-dollars.
 */
import { describe, expect, it } from 'vitest';
import { formatUsd, nanosToCents, priceProblem, scaledInteger, turnCostNanos, turnPrices } from '../../../../src/core/usage/cost.js';
import { audioSideOf } from '../../../../src/core/usage/pricing.js';

const turn = (promptTokens: number, completionTokens: number, cachedTokens = 0, tierMultiplier = 1) => ({ promptTokens, completionTokens, cachedTokens, tierMultiplier });

describe('reading a price', () => {
  it.each<[number | string, number, bigint | null]>([
    [0.15, 6, 150_000n],
    ['0.15', 6, 150_000n],
    [0.1 + 0.2, 6, null], // 0.30000000000000004: what the float is, not what anyone wrote
    [3, 6, 3_000_000n],
    ['2.500000', 6, 2_500_000n],
    ['1e-7', 9, 100n],
    [1e-7, 6, null],
    ['0.0000001', 6, null],
    ['12.3456789', 6, null],
    [' 7 ', 0, 7n],
    ['-1', 6, null],
    ['1.2.3', 6, null],
    ['', 6, null],
  ])('%s at %i decimals is %s', (value, decimals, expected) => {
    expect(scaledInteger(value, decimals)).toBe(expected);
  });

  it('says why a price is refused', () => {
    expect(priceProblem(0.15, 6)).toBeNull();
    expect(priceProblem(-0.15, 6)).toContain('non-negative');
    expect(priceProblem('0.0000001', 6)).toContain('at most 6 decimal places');
    expect(priceProblem(1e300, 6)).toBe('is too large');
  });
});

describe('prices per token', () => {
  it('are whole pico-dollars per token, the cached price defaulting to the input price', () => {
    expect(turnPrices({ input_per_million: 0.15, output_per_million: '0.6' }, null)).toEqual({ input: 150_000, cachedInput: 150_000, output: 600_000, audio: null });
    expect(turnPrices({ cached_input_per_million: 0.075 }, null)).toEqual({ input: 0, cachedInput: 75_000, output: 0, audio: null });
  });

  it('price the audio side of an audio endpoint per second, at 10 audio tokens a second', () => {
    // Whisper's $0.006 a minute: $0.0001 a second, 10,000,000 pico-dollars per audio token.
    expect(turnPrices({ audio_per_second: '0.0001', output_per_million: 10 }, 'prompt').audio).toEqual({ pico: 10_000_000, side: 'prompt' });
    expect(turnPrices({ audio_per_second: '0.0001' }, null).audio).toBeNull();
    expect([audioSideOf('transcription'), audioSideOf('realtime'), audioSideOf('speech'), audioSideOf('chat')]).toEqual(['prompt', 'prompt', 'completion', null]);
  });
});

describe('a turn\'s cost', () => {
  const prices = turnPrices({ input_per_million: 2, cached_input_per_million: 1, output_per_million: 8 }, null);

  it('charges uncached prompt, cached prompt and completion tokens each at their price, in nano-dollars', () => {
    // 800 x 2e6 + 200 x 1e6 + 500 x 8e6 pico-dollars.
    expect(turnCostNanos(turn(1000, 500, 200), prices)).toBe(5_800_000);
    expect(turnCostNanos(turn(0, 0), prices)).toBe(0);
  });

  it('applies the recorded service-tier multiplier exactly: flex 0.5x, priority 1.25x', () => {
    expect(turnCostNanos(turn(1000, 500, 200, 0.5), prices)).toBe(2_900_000);
    expect(turnCostNanos(turn(1000, 500, 200, 1.25), prices)).toBe(7_250_000);
  });

  it('rounds once per turn, halves up, to whole nano-dollars', () => {
    const cheap = turnPrices({ input_per_million: '0.000001', output_per_million: '0.000003' }, null);
    // 1 pico-dollar and 3 pico-dollars: 4 pico = 0.004 nano -> 0; 500 pico -> 1 (half up); 499 -> 0.
    expect(turnCostNanos(turn(1, 1), cheap)).toBe(0);
    expect(turnCostNanos(turn(500, 0), cheap)).toBe(1);
    expect(turnCostNanos(turn(499, 0), cheap)).toBe(0);
    // Flex on 3 pico-dollars is 1.5 pico: still rounded once, at the end.
    expect(turnCostNanos(turn(1000, 1, 0, 0.5), cheap)).toBe(1);
  });

  it('keeps short turns on cheap models: 20 tokens at $0.02 a million is 400 nano-dollars, not 0 micro-dollars', () => {
    expect(turnCostNanos(turn(10, 10), turnPrices({ input_per_million: 0.02, output_per_million: 0.02 }, null))).toBe(400);
  });

  it('never pays for more cached tokens than the prompt had, nor for negative counts', () => {
    expect(turnCostNanos(turn(10, 0, 50), prices)).toBe(10_000);
    expect(turnCostNanos(turn(-5, -5, -5), prices)).toBe(0);
  });

  it('stays exact past 2^53 pico-dollars (a million-token turn at $1000 a million)', () => {
    const dear = turnPrices({ input_per_million: 1000, output_per_million: 1000 }, null);
    // 1e7 tokens x 1e9 pico = 1e16 pico: beyond Number's exact integers, computed in BigInt.
    expect(turnCostNanos(turn(10_000_000, 0, 0, 1.25), dear)).toBe(12_500_000_000_000);
  });

  it('sums exactly where floats drift: a thousand turns of 0.1 and 0.2 cents are 300 cents', () => {
    const tenth = turnPrices({ input_per_million: 1000 }, null); // 1e-3 USD a token
    let sum = 0;
    for (let i = 0; i < 1000; i += 1) sum += turnCostNanos(turn(1, 0), tenth) + turnCostNanos(turn(2, 0), tenth);
    expect(sum).toBe(3_000_000_000);
    expect(nanosToCents(sum)).toBe(300);
  });

  it('prices the audio side per second and the other side per token', () => {
    const transcription = turnPrices({ audio_per_second: '0.0001', output_per_million: 10 }, 'prompt');
    // 60 s of audio (600 tokens) and 100 transcript tokens: $0.006 + $0.001.
    expect(turnCostNanos(turn(600, 100), transcription)).toBe(7_000_000);
    const speech = turnPrices({ input_per_million: 15, audio_per_second: '0.00025' }, 'completion');
    // 40 text tokens in, 10 s of audio out: 40 x 15e6 pico + 100 x 25e6 pico.
    expect(turnCostNanos(turn(40, 100), speech)).toBe(3_100_000);
  });

  it('refuses a multiplier it cannot price exactly', () => {
    expect(() => turnCostNanos(turn(1, 1, 0, Number.NaN), prices)).toThrow('multiplier');
  });
});

describe('money on the wire', () => {
  it.each<[bigint, string]>([
    [0n, '0.00'],
    [10_000_000n, '0.01'],
    [1_500_000_000n, '1.50'],
    [401n, '0.000000401'],
    [123_456_789_012n, '123.456789012'],
    [(2n ** 63n) - 1n, '9223372036.854775807'],
  ])('%s nano-dollars are %s USD', (nanos, usd) => {
    expect(formatUsd(nanos)).toBe(usd);
  });

  it('rounds nano-dollars to whole cents halves up', () => {
    expect([nanosToCents(0), nanosToCents(4_999_999), nanosToCents(5_000_000), nanosToCents(1_234_567_890)]).toEqual([0, 0, 1, 123]);
  });
});
