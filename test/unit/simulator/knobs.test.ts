import { describe, it, expect } from 'vitest';
import { DEFAULT_KNOBS, parseKnobs } from '../../../src/simulator/knobs.js';
import { SimError } from '../../../src/simulator/errors.js';

describe('parseKnobs', () => {
  it('returns defaults without headers or sim body', () => {
    expect(parseKnobs({ 'content-type': 'application/json' }, { model: 'x' })).toEqual(DEFAULT_KNOBS);
  });

  it('reads headers', () => {
    const k = parseKnobs(
      { 'x-sim-delay-ms': '5', 'x-sim-tokens': '3', 'x-sim-error-status': '503', 'x-sim-error-code': 'boom', 'x-sim-inline-think': '1', 'x-sim-cached-tokens': '7' },
      {},
    );
    expect(k).toMatchObject({ delayMs: 5, tokens: 3, errorStatus: 503, errorCode: 'boom', inlineThink: true, cachedTokens: 7 });
  });

  it('reads the body sim object, headers winning', () => {
    const k = parseKnobs({ 'x-sim-delay-ms': '9' }, { sim: { delay_ms: 1, fail_after: 2, reasoning_tokens: 4, first_token_delay_ms: 3 } });
    expect(k).toMatchObject({ delayMs: 9, failAfter: 2, reasoningTokens: 4, firstTokenDelayMs: 3 });
  });

  it('reads the embeddings knobs', () => {
    expect(parseKnobs({ 'x-sim-embedding-format': 'base64' }, { sim: { ignore_dimensions: true } })).toMatchObject({ embeddingFormat: 'base64', ignoreDimensions: true });
  });

  it.each([
    [{ 'x-sim-delay-ms': 'soon' }, {}],
    [{ 'x-sim-delay-ms': '-1' }, {}],
    [{ 'x-sim-error-status': '42' }, {}],
    [{}, { sim: { tokens: 1.5 } }],
    [{}, { sim: { inline_think: 'maybe' } }],
    [{ 'x-sim-embedding-format': 'binary' }, {}],
  ])('rejects malformed values %j %j', (headers, body) => {
    expect(() => parseKnobs(headers, body)).toThrow(SimError);
  });
});
