/** The Responses API translation, pure: items to chat messages, and chat stream chunks to Response events. */
import { describe, expect, it } from 'vitest';
import { canonicalItems, chatMessages } from '../../../../src/core/responses/input-items.js';
import { ResponseStreamTranslator } from '../../../../src/core/responses/stream-events.js';
import { chatBodyOf, outputOfCompletion } from '../../../../src/core/responses/translate.js';
import { parseResponseRequest } from '../../../../src/schemas/responses-request.js';

let n = 0;
const newId = (prefix: string): string => `${prefix}${++n}`;

describe('input items', () => {
  it('joins consecutive function calls onto one assistant message and keeps images as image_url parts', () => {
    const items = canonicalItems(
      [
        { role: 'user', content: [{ type: 'input_text', text: 'look' }, { type: 'input_image', image_url: 'https://example.com/a.png' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'calling' }] },
        { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
        { type: 'function_call', call_id: 'c2', name: 'g', arguments: '{"a":1}' },
        { type: 'function_call_output', call_id: 'c1', output: 'one' },
      ],
      'input',
      newId,
    );
    expect(chatMessages(items)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'auto' } }] },
      {
        role: 'assistant',
        content: 'calling',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } },
          { id: 'c2', type: 'function', function: { name: 'g', arguments: '{"a":1}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'one' },
    ]);
  });

  it('names the offending item in param', () => {
    expect(() => canonicalItems([{ type: 'item_reference', id: 'x' }], 'input', newId)).toThrow(expect.objectContaining({ code: 'unsupported_value', param: 'input[0].type' }));
  });
});

describe('stream translation', () => {
  it('closes the text item before a function call opens, and numbers events from 0', () => {
    const t = new ResponseStreamTranslator(newId);
    const events = [
      ...t.start(),
      ...t.chunk({ choices: [{ index: 0, delta: { content: 'Hi' } }] }),
      ...t.chunk({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', function: { name: 'f', arguments: '{"a"' } }] } }] }),
      ...t.chunk({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }, finish_reason: 'tool_calls' }] }),
      ...t.chunk({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 4 } }),
    ];
    const { events: closing, result } = t.finish();
    const all = [...events, ...closing, t.terminal('response.completed')];
    expect(all.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(all.map((e) => e.sequence_number)).toEqual(all.map((_, i) => i));
    expect(result.output).toMatchObject([{ type: 'message', content: [{ text: 'Hi' }] }, { type: 'function_call', call_id: 'call_1', name: 'f', arguments: '{"a":1}' }]);
    expect(result.usage).toEqual({ input_tokens: 3, input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 }, output_tokens: 4, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 7 });
  });

  it('marks the items an answer did not finish incomplete: cut at max_output_tokens, or by a failed stream', () => {
    const statuses = (finishReason: string | null, failed: boolean) => {
      const t = new ResponseStreamTranslator(newId);
      t.start();
      t.chunk({ choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: finishReason }] });
      const { events, result } = t.finish(failed);
      const done = events.find((e) => e.type === 'response.output_item.done') as { item: { status: string } } | undefined;
      return { item: result.output[0]?.status, event: done?.item.status, response: result.status };
    };
    expect(statuses('stop', false)).toEqual({ item: 'completed', event: 'completed', response: 'completed' });
    expect(statuses('length', false)).toEqual({ item: 'incomplete', event: 'incomplete', response: 'incomplete' });
    expect(statuses(null, true)).toEqual({ item: 'incomplete', event: 'incomplete', response: 'completed' });
  });
});

describe('non-streamed translation', () => {
  it('marks the items of an answer cut at max_output_tokens incomplete', () => {
    const completion = (finish_reason: string) => ({ choices: [{ index: 0, message: { role: 'assistant', content: 'Hi there' }, finish_reason }] });
    expect(outputOfCompletion(completion('length'), newId, new Map()).output[0]).toMatchObject({ type: 'message', status: 'incomplete' });
    expect(outputOfCompletion(completion('stop'), newId, new Map()).output[0]).toMatchObject({ type: 'message', status: 'completed' });
  });
});

describe('a very long input', () => {
  it('becomes chat messages without overflowing the stack (150,000 items were a 500)', () => {
    const request = parseResponseRequest({ model: 'm', input: 'x' });
    let n = 0;
    const input = canonicalItems(Array.from({ length: 150_000 }, () => ({ role: 'user', content: 'a' })), 'input', () => `msg_${n++}`);
    expect((chatBodyOf(request, [], input).messages as unknown[]).length).toBe(150_000);
  });

  it('joins a long run of function calls into one assistant message in linear time', () => {
    const calls = Array.from({ length: 50_000 }, (_, i) => ({ type: 'function_call', call_id: `c${i}`, name: 'f', arguments: '{}' }));
    const [message] = chatMessages(canonicalItems(calls, 'input', () => 'id'));
    expect((message as { tool_calls: unknown[] }).tool_calls).toHaveLength(50_000);
  });
});
