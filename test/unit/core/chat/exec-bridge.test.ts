import { describe, expect, it } from 'vitest';
import { addUsage, argumentsOf, checkClientTools, clientFacing, completionChunks, functionTools } from '../../../../src/core/chat/exec-bridge.js';
import type { ExecTool } from '../../../../src/core/exec/agent-registry.js';

const call = (name: string) => ({ id: `call_${name}`, type: 'function', function: { name, arguments: '{}' } });

describe('chat tool bridge, pure parts', () => {
  it('offers tools as exec__-prefixed function tools, sorted by name', () => {
    const tool = (name: string): ExecTool => ({ name, description: name, input_schema: { type: 'object' }, risk: 'read', mcp_visible: false });
    const offer = new Map([['zz', tool('zz')], ['a.b', tool('a.b')]]);
    expect(functionTools(offer).map((t) => (t.function as { name: string }).name)).toEqual(['exec__a.b', 'exec__zz']);
  });

  it('refuses a client tool under the reserved prefix, naming it', () => {
    expect(() => checkClientTools([{ function: { name: 'ok' } }, { function: { name: 'exec__x' } }])).toThrow(expect.objectContaining({ code: 'invalid_request', param: 'tools[1].function.name' }));
    expect(() => checkClientTools(undefined)).not.toThrow();
  });

  it('removes execution calls from the returned message and turns an emptied tool_calls finish into stop', () => {
    const mixed = clientFacing({ index: 0, message: { role: 'assistant', content: null, tool_calls: [call('exec__echo'), call('mine')] }, finish_reason: 'tool_calls' }, null);
    expect(mixed).toMatchObject({ finish_reason: 'tool_calls', message: { tool_calls: [call('mine')] } });
    const onlyOurs = clientFacing({ index: 0, message: { role: 'assistant', content: 'x', tool_calls: [call('exec__echo')] }, finish_reason: 'tool_calls' }, null);
    expect(onlyOurs).toMatchObject({ finish_reason: 'stop', message: { tool_calls: null } });
    expect(clientFacing({ index: 0, message: { tool_calls: [call('exec__echo')] }, finish_reason: 'tool_calls' }, 'length')).toMatchObject({ finish_reason: 'length' });
  });

  it('reads arguments only when they are a JSON object', () => {
    expect(argumentsOf({ id: 'c', name: 'n', arguments: '{"a":1}' })).toEqual({ a: 1 });
    expect(argumentsOf({ id: 'c', name: 'n', arguments: '' })).toEqual({});
    expect(argumentsOf({ id: 'c', name: 'n', arguments: '[1]' })).toBeNull();
    expect(argumentsOf({ id: 'c', name: 'n', arguments: '{' })).toBeNull();
  });

  it('sums usage field by field, keeping null details null', () => {
    const u = (p: number, c: number, r: number | null) => ({
      prompt_tokens: p, completion_tokens: c, total_tokens: p + c,
      prompt_tokens_details: { cached_tokens: 1, audio_tokens: null },
      completion_tokens_details: { reasoning_tokens: r, audio_tokens: null, accepted_prediction_tokens: null, rejected_prediction_tokens: null },
    });
    expect(addUsage(u(10, 5, null), u(20, 7, null))).toEqual({ ...u(30, 12, null), prompt_tokens_details: { cached_tokens: 2, audio_tokens: null } });
    expect((addUsage(u(1, 1, 2), u(1, 1, 3)).completion_tokens_details as { reasoning_tokens: number }).reasoning_tokens).toBe(5);
  });

  it('renders a finished completion as content, finish and (asked for) usage chunks', () => {
    const body = { id: 'chatcmpl-1', created: 1, model: 'm', service_tier: 'default', usage: { total_tokens: 3 }, choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, logprobs: null, finish_reason: 'stop' }] };
    const chunks = completionChunks(body, true);
    expect(chunks.map((c) => c.choices)).toEqual([
      [{ index: 0, delta: { role: 'assistant', content: 'hi' }, logprobs: null, finish_reason: null }],
      [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }],
      [],
    ]);
    expect(chunks[2]).toMatchObject({ object: 'chat.completion.chunk', usage: { total_tokens: 3 } });
    expect(completionChunks(body, false)).toHaveLength(2);
  });
});
