import { describe, expect, it } from 'vitest';
import { eventType, sequenceOf, usageOfEvent, usageOfResponse } from '../../../../src/core/responses/upstream-usage.js';

const response = { id: 'resp_1', usage: { input_tokens: 12, input_tokens_details: { cached_tokens: 4 }, output_tokens: 9, output_tokens_details: { reasoning_tokens: 2 }, total_tokens: 21 } };

describe('usage of a Responses API answer passed through', () => {
  it('reads the Response usage as the ledger counts it', () => {
    expect(usageOfResponse(response)).toEqual({ promptTokens: 12, completionTokens: 9, cachedTokens: 4, reasoningTokens: 2, source: 'upstream' });
  });

  it('reports no usage when the Response has none, and ignores values that are not counts', () => {
    expect(usageOfResponse({ id: 'resp_1', usage: null })).toBeNull();
    expect(usageOfResponse('nope')).toBeNull();
    expect(usageOfResponse({ usage: { input_tokens: -3, output_tokens: 'x' } })).toEqual({ promptTokens: 0, completionTokens: 0, cachedTokens: 0, reasoningTokens: null, source: 'upstream' });
  });

  it('finds the usage on a terminal streamed event only, named by event: or by the data type', () => {
    const data = JSON.stringify({ type: 'response.completed', sequence_number: 7, response });
    expect(usageOfEvent({ event: 'response.completed', data }).usage?.promptTokens).toBe(12);
    expect(usageOfEvent({ event: null, data }).terminal).toBe(true);
    expect(usageOfEvent({ event: 'response.output_text.delta', data: '{"type":"response.output_text.delta","delta":"hi"}' })).toEqual({ terminal: false, usage: null });
    expect(usageOfEvent({ event: 'response.failed', data: 'not json' })).toEqual({ terminal: true, usage: null });
    expect(eventType({ event: null, data: ' { "type" : "response.created" }' })).toBe('response.created');
    expect(sequenceOf(data)).toBe(7);
    expect(sequenceOf('{}')).toBeNull();
  });
});
