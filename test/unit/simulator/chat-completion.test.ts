import { describe, it, expect } from 'vitest';
import {
  applyStop,
  countPromptTokens,
  DEFAULT_CONTENT_TOKENS,
  DEFAULT_REASONING_TOKENS,
  planChatTurn,
  renderCompletion,
  sampleArguments,
  TOOL_CALL_TOKENS,
  totalDelayMs,
  type PlannedChoice,
  type PlannedTurn,
} from '../../../src/simulator/chat-completion.js';
import { parseChatRequest } from '../../../src/simulator/chat-request.js';
import { SimError } from '../../../src/simulator/errors.js';
import { DEFAULT_KNOBS, type Knobs } from '../../../src/simulator/knobs.js';

function plan(body: Record<string, unknown>, knobs: Partial<Knobs> = {}, reasons = false): PlannedTurn {
  return planChatTurn(parseChatRequest(body), { ...DEFAULT_KNOBS, ...knobs }, { reasons });
}

function only(turn: PlannedTurn): PlannedChoice {
  const c = turn.choices[0];
  if (!c) throw new Error('no choice');
  return c;
}

const user = (content: string): Record<string, unknown> => ({ model: 'sim-chat', messages: [{ role: 'user', content }] });

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, days: { type: 'integer' }, metric: { type: 'boolean' }, extra: { type: 'object' } },
    },
  },
};

describe('planChatTurn: content', () => {
  it('is deterministic and has the default length', () => {
    const a = only(plan(user('hello')));
    const b = only(plan(user('hello')));
    expect(a.contentText).toBe(b.contentText);
    expect(a.content).toHaveLength(DEFAULT_CONTENT_TOKENS);
    expect(a.content[0]?.startsWith(' ')).toBe(false);
    expect(a.content.slice(1).every((t) => t.startsWith(' '))).toBe(true);
    expect(a.finishReason).toBe('stop');
  });

  it('depends on the prompt and the seed', () => {
    const base = only(plan(user('hello'))).contentText;
    expect(only(plan(user('goodbye'))).contentText).not.toBe(base);
    expect(only(plan({ ...user('hello'), seed: 7 })).contentText).not.toBe(base);
  });

  it('echoes text after "echo:" exactly', () => {
    const c = only(plan(user('echo:   Hello  wide world ')));
    expect(c.contentText).toBe('Hello  wide world');
    expect(c.content).toEqual(['Hello', ' ', ' wide', ' world']);
  });

  it('honours the tokens knob', () => {
    expect(only(plan(user('x'), { tokens: 3 })).content).toHaveLength(3);
    expect(only(plan(user('x'), { tokens: 0 })).contentText).toBe('');
  });

  it('gives n different choices, choice 0 unchanged by n', () => {
    const turn = plan({ ...user('hello'), n: 3 });
    expect(turn.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(new Set(turn.choices.map((c) => c.contentText)).size).toBe(3);
    expect(turn.choices[0]?.contentText).toBe(only(plan(user('hello'))).contentText);
    expect(turn.usage.completion_tokens).toBe(3 * DEFAULT_CONTENT_TOKENS);
  });
});

describe('planChatTurn: length and stop', () => {
  it('cuts at max_tokens with finish_reason length', () => {
    const c = only(plan({ ...user('hello'), max_tokens: 5 }));
    expect(c.content).toHaveLength(5);
    expect(c.finishReason).toBe('length');
    expect(c.completionTokens).toBe(5);
  });

  it('prefers max_completion_tokens over max_tokens', () => {
    expect(only(plan({ ...user('hello'), max_tokens: 5, max_completion_tokens: 2 })).content).toHaveLength(2);
  });

  it('does not report length when the budget fits exactly', () => {
    expect(only(plan({ ...user('hello'), max_tokens: DEFAULT_CONTENT_TOKENS })).finishReason).toBe('stop');
  });

  it('cuts before the earliest stop sequence and excludes it', () => {
    const c = only(plan({ ...user('echo: one two three four'), stop: ['four', 'thr'] }));
    expect(c.contentText).toBe('one two ');
    expect(c.content).toEqual(['one', ' two', ' ']);
    expect(c.finishReason).toBe('stop');
  });

  it('accepts a single stop string', () => {
    expect(only(plan({ ...user('echo: a b c'), stop: ' b' })).contentText).toBe('a');
  });

  it('reports length when the budget runs out before the stop point', () => {
    const c = only(plan({ ...user('echo: a b c d'), stop: 'd', max_tokens: 2 }));
    expect(c.contentText).toBe('a b');
    expect(c.finishReason).toBe('length');
  });

  it('applyStop leaves text without a match alone', () => {
    expect(applyStop(['a', ' b'], ['zz'])).toEqual({ tokens: ['a', ' b'], stopped: false });
  });
});

describe('planChatTurn: tools', () => {
  it('calls the first tool with sample arguments', () => {
    const c = only(plan({ ...user('weather?'), tools: [weatherTool] }));
    expect(c.contentText).toBeNull();
    expect(c.finishReason).toBe('tool_calls');
    expect(c.toolCalls).toHaveLength(1);
    const call = c.toolCalls[0];
    expect(call?.name).toBe('get_weather');
    expect(call?.id).toMatch(/^call_[0-9A-Za-z]{24}$/);
    expect(JSON.parse(call?.arguments ?? '')).toEqual({ city: 'sample', days: 1, metric: true, extra: null });
    expect(c.completionTokens).toBe(TOOL_CALL_TOKENS);
  });

  it('calls the function named by tool_choice', () => {
    const other = { type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } };
    const c = only(plan({ ...user('x'), tools: [weatherTool, other], tool_choice: { type: 'function', function: { name: 'lookup' } } }));
    expect(c.toolCalls[0]?.name).toBe('lookup');
  });

  it('answers with content when tool_choice is none', () => {
    const c = only(plan({ ...user('x'), tools: [weatherTool], tool_choice: 'none' }));
    expect(c.toolCalls).toHaveLength(0);
    expect(c.content).toHaveLength(DEFAULT_CONTENT_TOKENS);
  });

  it('answers in prose after a tool result', () => {
    const body = {
      model: 'sim-chat',
      tools: [weatherTool],
      messages: [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      ],
    };
    const c = only(plan(body));
    expect(c.contentText?.startsWith('Tool result received:')).toBe(true);
    expect(c.content).toHaveLength(DEFAULT_CONTENT_TOKENS);
    expect(c.finishReason).toBe('stop');
  });

  it('rejects tool_choice naming an unknown function', () => {
    expect(() => plan({ ...user('x'), tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'nope' } } })).toThrow(SimError);
  });

  it('sampleArguments uses enum values and tolerates missing schemas', () => {
    expect(sampleArguments({ properties: { u: { enum: ['c', 'f'] }, n: { type: ['null', 'number'] } } })).toBe('{"u":"c","n":1}');
    expect(sampleArguments(undefined)).toBe('{}');
  });
});

describe('planChatTurn: logprobs', () => {
  it('has one entry per content token with top_logprobs', () => {
    const c = only(plan({ ...user('hello'), logprobs: true, top_logprobs: 3, max_tokens: 4 }));
    expect(c.logprobs).toHaveLength(4);
    c.logprobs?.forEach((entry, i) => {
      expect(entry.token).toBe(c.content[i]);
      expect(entry.logprob).toBeLessThan(0);
      expect(entry.bytes).toEqual(Array.from(Buffer.from(entry.token, 'utf8')));
      expect(entry.top_logprobs).toHaveLength(3);
      expect(entry.top_logprobs[0]?.token).toBe(entry.token);
      expect(new Set(entry.top_logprobs.map((t) => t.token)).size).toBe(3);
    });
  });

  it('is null without the flag and for tool calls', () => {
    expect(only(plan(user('hello'))).logprobs).toBeNull();
    expect(only(plan({ ...user('x'), logprobs: true, tools: [weatherTool] })).logprobs).toBeNull();
  });

  it('excludes reasoning tokens', () => {
    const c = only(plan({ ...user('hello'), logprobs: true }, {}, true));
    expect(c.reasoning).toHaveLength(DEFAULT_REASONING_TOKENS);
    expect(c.logprobs).toHaveLength(DEFAULT_CONTENT_TOKENS);
  });

  it('renders as {content, refusal} on the message', () => {
    const body = renderCompletion(plan({ ...user('x'), logprobs: true }), 'id', 1);
    expect(body.choices[0]?.logprobs?.refusal).toBeNull();
    expect(body.choices[0]?.logprobs?.content).toHaveLength(DEFAULT_CONTENT_TOKENS);
    expect(renderCompletion(plan(user('x')), 'id', 1).choices[0]?.logprobs).toBeNull();
  });
});

describe('planChatTurn: reasoning', () => {
  it('emits reasoning first and counts it', () => {
    const turn = plan(user('hello'), {}, true);
    const c = only(turn);
    expect(c.reasoning).toHaveLength(DEFAULT_REASONING_TOKENS);
    expect(turn.usage.completion_tokens).toBe(DEFAULT_REASONING_TOKENS + DEFAULT_CONTENT_TOKENS);
    expect(turn.usage.completion_tokens_details.reasoning_tokens).toBe(DEFAULT_REASONING_TOKENS);
    const msg = renderCompletion(turn, 'id', 1).choices[0]?.message;
    expect(msg?.reasoning_content).toBe(c.reasoning.join(''));
  });

  it('can be disabled by the request', () => {
    for (const extra of [{ reasoning_effort: 'none' }, { reasoning: { enabled: false } }, { reasoning: { effort: 'none' } }]) {
      const turn = plan({ ...user('hello'), ...extra }, {}, true);
      expect(only(turn).reasoning).toHaveLength(0);
      expect(turn.usage.completion_tokens_details.reasoning_tokens).toBe(0);
    }
  });

  it('spends max_tokens on reasoning first', () => {
    const c = only(plan({ ...user('hello'), max_tokens: 5 }, { reasoningTokens: 8 }, true));
    expect(c.reasoning).toHaveLength(5);
    expect(c.contentText).toBe('');
    expect(c.finishReason).toBe('length');
  });

  it('applies stop to the answer only', () => {
    const c = only(plan({ ...user('echo: alpha beta'), stop: [' beta'] }, { reasoningTokens: 20 }, true));
    expect(c.reasoning).toHaveLength(20);
    expect(c.contentText).toBe('alpha');
  });

  it('inline-think puts reasoning inside content', () => {
    const turn = plan({ ...user('echo: answer here'), logprobs: true }, { inlineThink: true, reasoningTokens: 2 }, true);
    const c = only(turn);
    expect(c.reasoning).toHaveLength(0);
    expect(c.contentText).toMatch(/^<think>\w+ \w+<\/think>answer here$/);
    expect(c.content).toHaveLength(2 + 2 + 2);
    expect(c.logprobs).toHaveLength(c.content.length);
    expect(turn.usage.completion_tokens_details.reasoning_tokens).toBe(2);
  });

  it('non-reasoning models ignore reasoning knobs', () => {
    expect(only(plan(user('x'), { reasoningTokens: 5, inlineThink: true })).contentText).not.toContain('<think>');
  });
});

describe('usage and delays', () => {
  it('counts prompt tokens from message bytes', () => {
    expect(countPromptTokens(['12345678', 'abc'])).toBe(Math.ceil(11 / 4) + 6);
    const turn = plan(user('12345678'), { cachedTokens: 2 });
    expect(turn.usage.prompt_tokens).toBe(2 + 3);
    expect(turn.usage.prompt_tokens_details.cached_tokens).toBe(2);
    expect(turn.usage.total_tokens).toBe(turn.usage.prompt_tokens + turn.usage.completion_tokens);
  });

  it('counts text parts of multimodal content', () => {
    const turn = plan({ messages: [{ role: 'user', content: [{ type: 'text', text: 'echo: hi' }, { type: 'image_url', image_url: { url: 'x' } }] }] });
    expect(only(turn).contentText).toBe('hi');
    expect(turn.model).toBe('sim-chat');
  });

  it('non-streaming delay equals the streamed duration', () => {
    const turn = plan(user('x'), { tokens: 4 });
    expect(totalDelayMs(turn, { ...DEFAULT_KNOBS, delayMs: 10 })).toBe(40);
    expect(totalDelayMs(turn, { ...DEFAULT_KNOBS, delayMs: 10, firstTokenDelayMs: 100 })).toBe(130);
  });
});

describe('parseChatRequest validation', () => {
  it.each([
    [{}, 'messages'],
    [{ messages: [] }, 'messages'],
    [{ messages: [{ content: 'x' }] }, 'messages[0].role'],
    [{ messages: [{ role: 'user', content: 'x' }], n: 0 }, 'n'],
    [{ messages: [{ role: 'user', content: 'x' }], max_tokens: -1 }, 'max_tokens'],
    [{ messages: [{ role: 'user', content: 'x' }], stop: 5 }, 'stop'],
  ])('rejects %j', (body, param) => {
    try {
      parseChatRequest(body);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(SimError);
      expect((err as SimError).status).toBe(400);
      expect((err as SimError).param).toBe(param);
    }
  });
});
