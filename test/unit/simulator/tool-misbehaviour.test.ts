import { describe, expect, it } from 'vitest';
import { planChatTurn } from '../../../src/simulator/chat-completion.js';
import { parseChatRequest } from '../../../src/simulator/chat-request.js';
import { parseKnobs } from '../../../src/simulator/knobs.js';
import { misbehave } from '../../../src/simulator/tool-misbehaviour.js';

const body = (messages: unknown[], sim: Record<string, unknown>) => ({
  model: 'sim-chat',
  messages,
  tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }],
  sim,
});
const turnFor = (b: ReturnType<typeof body>) => misbehave(planChatTurn(parseChatRequest(b), parseKnobs({}, b), { reasons: false }), parseKnobs({}, b), b);

describe('simulator tool misbehaviour knobs', () => {
  it('writes the tool call as text with tool_call_as_text', () => {
    const choice = turnFor(body([{ role: 'user', content: 'x' }], { tool_call_as_text: true })).choices[0]!;
    expect(choice.toolCalls).toEqual([]);
    expect(choice.finishReason).toBe('stop');
    expect(choice.contentText).toBe('<tool_call>{"name": "lookup", "arguments": {"q":"sample"}}</tool_call>');
  });

  it('breaks the arguments while the conversation has fewer assistant messages than malformed_tool_calls', () => {
    const broken = turnFor(body([{ role: 'user', content: 'x' }], { malformed_tool_calls: 1 })).choices[0]!;
    expect(broken.toolCalls[0]?.arguments).toBe('{"q":"sample"');
    const fixed = turnFor(body([{ role: 'user', content: 'x' }, { role: 'assistant', content: 'tried' }, { role: 'user', content: 'again' }], { malformed_tool_calls: 1 })).choices[0]!;
    expect(fixed.toolCalls[0]?.arguments).toBe('{"q":"sample"}');
  });

  it('calls an undeclared tool with undeclared_tool', () => {
    expect(turnFor(body([{ role: 'user', content: 'x' }], { undeclared_tool: 'rm_rf' })).choices[0]?.toolCalls[0]?.name).toBe('rm_rf');
  });
});
