import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { chatRequestSchema, parseChatRequest } from '../../../src/schemas/chat-request.js';
import { cutLongCollections, safeParseCut } from '../../../src/schemas/long-arrays.js';
import { parseResponseRequest } from '../../../src/schemas/responses-request.js';
import { expectRefusal, refusalOf } from './refusal.js';

type Body = Record<string, unknown>;

const USER = { role: 'user', content: 'Hello' };
const body = (overrides: Body = {}): Body => ({ model: 'any-model', messages: [USER], ...overrides });
const weatherTool = (name = 'get_weather'): Body => ({
  type: 'function',
  function: { name, description: 'Weather by city', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: true },
});

/** Every parameter of SPEC "Chat completion request (body)" at once, each with a valid value. */
const RICH: Body = {
  model: 'gpt-anything',
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'developer', content: [{ type: 'text', text: 'Answer in English.' }] },
    {
      role: 'user',
      name: 'ada',
      content: [
        { type: 'text', text: 'What is in these?' },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'high' } },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
        { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
        { type: 'video_url', video_url: { url: 'https://example.com/clip.mp4' } },
      ],
    },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 3}' },
    { role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot help with that.' }] },
    { role: 'assistant', content: null, refusal: 'No.' },
    { role: 'user', content: '' },
  ],
  max_tokens: 100,
  max_completion_tokens: 200,
  temperature: 2,
  top_p: 0,
  stream: true,
  stream_options: { include_usage: true },
  stop: ['END', 'STOP', 'x'.repeat(256), ''],
  frequency_penalty: -2,
  presence_penalty: 2,
  top_k: 0,
  min_p: 1,
  repetition_penalty: 1.05,
  n: 1,
  seed: 9_223_372_036_854_775_807,
  logprobs: true,
  top_logprobs: 20,
  logit_bias: { '50256': -100, '11': 100, '0': 0.5 },
  tools: [weatherTool()],
  tool_choice: { type: 'function', function: { name: 'get_weather' } },
  parallel_tool_calls: false,
  response_format: { type: 'json_schema', json_schema: { name: 'weather', description: 'A report', schema: { type: 'object' }, strict: true } },
  metadata: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`.padEnd(64, 'k'), 'v'.repeat(512)])),
  user: 'user-1234',
  store: false,
  reasoning_effort: 'high',
  reasoning: { effort: 'high', enabled: true, max_tokens: 1024, exclude: false },
  include_reasoning: true,
  service_tier: 'flex',
  prediction: { type: 'content', content: [{ type: 'text', text: 'predicted' }] },
  modalities: ['audio', 'text'],
  audio: { voice: 'alloy', format: 'mp3' },
  functions: null,
  function_call: null,
};

describe('parseChatRequest accepts', () => {
  it('a request using every SPEC parameter at once', () => {
    const parsed = parseChatRequest(RICH);
    expect(parsed).toMatchObject({ model: 'gpt-anything', temperature: 2, stop: RICH['stop'], reasoning_effort: 'high', service_tier: 'flex' });
    expect(parsed.messages).toHaveLength(8);
  });

  it('returns that request whole: every field as sent, explicit nulls read as absent', () => {
    const messages = (RICH['messages'] as Body[]).map((m) => (m['content'] === null ? { ...m, content: undefined } : m));
    expect(parseChatRequest(RICH)).toStrictEqual({ ...RICH, messages, functions: undefined, function_call: undefined });
  });

  it('the minimal request of a model and one message', () => {
    expect(parseChatRequest(body())).toEqual(body());
  });

  it('keeps unknown fields at every level untouched', () => {
    const extras = {
      ...body({ x_vendor: { nested: [1, 2] }, chat_template_kwargs: { enable_thinking: false } }),
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }], x_tag: 7 }],
      tools: [{ ...weatherTool(), x_server: true }],
    };
    const parsed = parseChatRequest(extras);
    expect(parsed).toMatchObject({ x_vendor: { nested: [1, 2] }, chat_template_kwargs: { enable_thinking: false }, tools: [{ x_server: true }] });
    expect(parsed.messages[0]).toEqual(extras.messages[0]);
  });

  it.each([
    'max_tokens', 'temperature', 'top_p', 'stream', 'stream_options', 'stop', 'n', 'seed', 'logprobs', 'top_logprobs',
    'logit_bias', 'tools', 'tool_choice', 'response_format', 'metadata', 'store', 'reasoning_effort', 'reasoning',
    'service_tier', 'prediction', 'modalities', 'audio', 'functions', 'function_call',
  ])('an explicit null %s as if it were absent', (field) => {
    expect(parseChatRequest(body({ [field]: null }))[field]).toBeUndefined();
  });

  it.each<[string, Body]>([
    ['a single stop string', { stop: 'END' }],
    ['tool_choice as a string without tools', { tool_choice: 'required' }],
    ['an empty tools array', { tools: [] }],
    ['response_format json_object', { response_format: { type: 'json_object' } }],
    ['response_format text', { response_format: { type: 'text' } }],
    ['prediction content as a string', { prediction: { type: 'content', content: 'abc' } }],
    ['modalities of text alone', { modalities: ['text'] }],
    ['an unrecognized service_tier', { service_tier: 'platinum' }],
    ['n above 1 without streaming', { n: 128 }],
    ['stream_options when streaming', { stream: true, stream_options: {} }],
    ['top_logprobs 0 with logprobs', { logprobs: true, top_logprobs: 0 }],
    ['an empty logit_bias and metadata', { logit_bias: {}, metadata: {} }],
  ])('%s', (_, overrides) => {
    expect(() => parseChatRequest(body(overrides))).not.toThrow();
  });
});

describe('parseChatRequest refuses', () => {
  it('a temperature out of range, saying what was sent and what is allowed', () => {
    const err = expectRefusal(() => parseChatRequest(body({ temperature: 3 })), { code: 'invalid_request', param: 'temperature' });
    expect(err.message).toBe('temperature must be a number between 0 and 2; got 3.');
  });

  it.each<[string, unknown, string | null, RegExp]>([
    ['a body that is an array', [], null, /request body must be a JSON object; got an array/],
    ['a body that is null', null, null, /must be a JSON object/],
    ['a body that is a string', 'hello', null, /must be a JSON object/],
    ['a missing model', { messages: [USER] }, 'model', /model must be a non-empty string; got nothing/],
    ['an empty model', body({ model: '' }), 'model', /non-empty string/],
    ['a numeric model', body({ model: 4 }), 'model', /non-empty string; got 4/],
    ['missing messages', { model: 'm' }, 'messages', /non-empty array of messages/],
    ['empty messages', body({ messages: [] }), 'messages', /non-empty array/],
    ['messages that are an object', body({ messages: {} }), 'messages', /non-empty array/],
  ])('%s', (_, input, param, message) => {
    expectRefusal(() => parseChatRequest(input), { code: 'invalid_request', param, message });
  });

  it.each<[string, Body, string, RegExp]>([
    ['functions', { functions: [{ name: 'f' }] }, 'functions', /use tools instead/],
    ['function_call', { function_call: 'auto' }, 'function_call', /use tool_choice instead/],
    ['an empty functions array', { functions: [] }, 'functions', /legacy function calling/],
  ])('legacy %s as unsupported_parameter', (_, overrides, param, message) => {
    expectRefusal(() => parseChatRequest(body(overrides)), { code: 'unsupported_parameter', param, message });
  });

  it.each<[string, Body, string, RegExp]>([
    ['max_tokens 0', { max_tokens: 0 }, 'max_tokens', /positive integer; got 0/],
    ['a negative max_tokens', { max_tokens: -5 }, 'max_tokens', /positive integer/],
    ['a fractional max_tokens', { max_tokens: 1.5 }, 'max_tokens', /positive integer/],
    ['max_tokens as a string', { max_tokens: '10' }, 'max_tokens', /positive integer; got "10"/],
    ['max_completion_tokens 0', { max_completion_tokens: 0 }, 'max_completion_tokens', /positive integer/],
    ['a negative temperature', { temperature: -0.1 }, 'temperature', /between 0 and 2/],
    ['a temperature as text', { temperature: 'hot' }, 'temperature', /between 0 and 2; got "hot"/],
    ['top_p above 1', { top_p: 1.1 }, 'top_p', /between 0 and 1/],
    ['frequency_penalty below -2', { frequency_penalty: -2.5 }, 'frequency_penalty', /between -2 and 2/],
    ['presence_penalty above 2', { presence_penalty: 2.1 }, 'presence_penalty', /between -2 and 2/],
    ['a negative top_k', { top_k: -1 }, 'top_k', /integer of at least 0/],
    ['a fractional top_k', { top_k: 1.5 }, 'top_k', /integer/],
    ['min_p above 1', { min_p: 1.5 }, 'min_p', /between 0 and 1/],
    ['repetition_penalty 0', { repetition_penalty: 0 }, 'repetition_penalty', /greater than 0/],
    ['n 0', { n: 0 }, 'n', /between 1 and 128/],
    ['n above 128', { n: 129 }, 'n', /between 1 and 128/],
    ['a fractional seed', { seed: 1.5 }, 'seed', /integer/],
    ['logprobs as text', { logprobs: 'yes' }, 'logprobs', /true or false/],
    ['top_logprobs above 20', { logprobs: true, top_logprobs: 21 }, 'top_logprobs', /between 0 and 20/],
    ['top_logprobs without logprobs', { top_logprobs: 5 }, 'top_logprobs', /requires logprobs: true; got logprobs absent\./],
    ['top_logprobs with logprobs false', { logprobs: false, top_logprobs: 5 }, 'top_logprobs', /got logprobs false/],
    ['a non-numeric logit_bias key', { logit_bias: { abc: 1 } }, 'logit_bias', /token ids.*got the key "abc"/],
    ['a negative token id', { logit_bias: { '-1': 1 } }, 'logit_bias', /token ids/],
    ['a logit_bias value above 100', { logit_bias: { '42': 101 } }, 'logit_bias', /-100 and 100; got 101 at logit_bias.42/],
    ['a logit_bias value as text', { logit_bias: { '42': 'x' } }, 'logit_bias', /-100 and 100/],
    ['a logit_bias array', { logit_bias: [1] }, 'logit_bias', /token ids/],
    ['stream as text', { stream: 'true' }, 'stream', /true or false/],
    ['stream_options without stream', { stream_options: { include_usage: true } }, 'stream_options', /only when stream is true; got stream absent\./],
    ['stream_options with stream false', { stream: false, stream_options: {} }, 'stream_options', /got stream false/],
    ['a non-boolean include_usage', { stream: true, stream_options: { include_usage: 1 } }, 'stream_options.include_usage', /true or false/],
    ['n above 1 when streaming', { stream: true, n: 2 }, 'n', /only n=1 is supported when streaming/],
    ['five stop sequences', { stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop', /at most 4 strings.*got 5 sequences/],
    ['a stop sequence of 257 characters', { stop: ['x'.repeat(257)] }, 'stop', /each at most 256 characters; got a sequence of 257/],
    ['a single stop string of 257 characters', { stop: 'x'.repeat(257) }, 'stop', /257 characters/],
    ['a non-string stop sequence', { stop: ['a', 1] }, 'stop', /got 1 at stop\[1\]/],
    ['a numeric stop', { stop: 5 }, 'stop', /a string or an array/],
    ['17 metadata pairs', { metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }, 'metadata', /got more than 16 pairs/],
    ['a metadata key of 65 characters', { metadata: { ['k'.repeat(65)]: 'v' } }, 'metadata', /got a key of 65 characters/],
    ['a metadata value of 513 characters', { metadata: { k: 'v'.repeat(513) } }, 'metadata', /513 characters\) at metadata.k/],
    ['a numeric metadata value', { metadata: { k: 1 } }, 'metadata', /string values/],
    ['metadata as an array', { metadata: ['k'] }, 'metadata', /object of at most 16 pairs/],
    ['a numeric user', { user: 5 }, 'user', /must be a string/],
    ['store as text', { store: 'yes' }, 'store', /true or false/],
    ['a numeric service_tier', { service_tier: 5 }, 'service_tier', /must be a string/],
    ['an unknown reasoning_effort', { reasoning_effort: 'extreme' }, 'reasoning_effort', /one of none, minimal, low, medium, high, xhigh, max; got "extreme"/],
    ['an unknown reasoning.effort', { reasoning: { effort: 'turbo' } }, 'reasoning.effort', /one of none, minimal/],
    ['a non-boolean reasoning.enabled', { reasoning: { enabled: 'yes' } }, 'reasoning.enabled', /true or false/],
    ['reasoning.max_tokens 0', { reasoning: { max_tokens: 0 } }, 'reasoning.max_tokens', /positive integer/],
    ['a non-boolean reasoning.exclude', { reasoning: { exclude: 1 } }, 'reasoning.exclude', /true or false/],
    ['reasoning as a string', { reasoning: 'high' }, 'reasoning', /must be an object/],
    ['a non-boolean include_reasoning', { include_reasoning: 'no' }, 'include_reasoning', /true or false/],
    ['a prediction type other than content', { prediction: { type: 'text', content: 'x' } }, 'prediction.type', /must be content; got "text"/],
    ['a numeric prediction content', { prediction: { type: 'content', content: 5 } }, 'prediction.content', /string or an array of text parts/],
    ['a prediction part without text', { prediction: { type: 'content', content: [{ type: 'text' }] } }, 'prediction.content[0].text', /must be a string/],
    ['modalities of audio alone', { modalities: ['audio'] }, 'modalities', /\["text"\] or \["text", "audio"\]; got \["audio"\]/],
    ['an image modality', { modalities: ['text', 'image'] }, 'modalities', /\["text"\] or/],
    ['a repeated modality', { modalities: ['text', 'text'] }, 'modalities', /\["text"\] or/],
    ['modalities as a string', { modalities: 'text' }, 'modalities', /\["text"\] or/],
    ['audio without a voice', { audio: { format: 'mp3' } }, 'audio.voice', /non-empty string; got nothing/],
    ['audio as a string', { audio: 'alloy' }, 'audio', /voice and format/],
  ])('%s', (_, overrides, param, message) => {
    expectRefusal(() => parseChatRequest(body(overrides)), { code: 'invalid_request', param, message });
  });

  it.each<[string, Body, string, RegExp]>([
    ['tools that are not an array', { tools: {} }, 'tools', /array of function tools/],
    ['a tool whose type is not function', { tools: [{ ...weatherTool(), type: 'retrieval' }] }, 'tools[0].type', /must be function/],
    ['a tool name with a space', { tools: [weatherTool('get weather')] }, 'tools[0].function.name', /1 to 64 letters, digits, underscores or dashes; got "get weather"/],
    ['a tool name of 65 characters', { tools: [weatherTool('f'.repeat(65))] }, 'tools[0].function.name', /1 to 64/],
    ['a tool without a function', { tools: [{ type: 'function' }] }, 'tools[0].function', /object with a name/],
    ['tool parameters that are an array', { tools: [{ type: 'function', function: { name: 'f', parameters: [] } }] }, 'tools[0].function.parameters', /JSON schema object/],
    ['a non-boolean tool strict', { tools: [{ type: 'function', function: { name: 'f', strict: 'yes' } }] }, 'tools[0].function.strict', /true or false/],
    ['an unknown tool_choice string', { tool_choice: 'sometimes' }, 'tool_choice', /auto, none, required, or/],
    ['a tool_choice object without a function', { tool_choice: { type: 'function' } }, 'tool_choice.function', /object with a name/],
    ['a tool_choice naming an undeclared tool', { tools: [weatherTool()], tool_choice: { type: 'function', function: { name: 'search' } } }, 'tool_choice', /declared in tools: one of get_weather; got "search"/],
    ['a named tool_choice without tools', { tool_choice: { type: 'function', function: { name: 'search' } } }, 'tool_choice', /no tools were sent/],
    ['a non-boolean parallel_tool_calls', { parallel_tool_calls: 1 }, 'parallel_tool_calls', /true or false/],
    ['an unknown response_format type', { response_format: { type: 'xml' } }, 'response_format.type', /one of text, json_object, json_schema/],
    ['response_format json_schema without json_schema', { response_format: { type: 'json_schema' } }, 'response_format.json_schema', /required when type is json_schema/],
    ['a json_schema name with a dot', { response_format: { type: 'json_schema', json_schema: { name: 'a.b' } } }, 'response_format.json_schema.name', /1 to 64/],
    ['a json_schema schema that is a string', { response_format: { type: 'json_schema', json_schema: { name: 'a', schema: '{}' } } }, 'response_format.json_schema.schema', /JSON schema object/],
  ])('%s', (_, overrides, param, message) => {
    expectRefusal(() => parseChatRequest(body(overrides)), { code: 'invalid_request', param, message });
  });

  it('reports the first problem when several fields are wrong', () => {
    expectRefusal(() => parseChatRequest(body({ temperature: 5, top_p: 5 })), { code: 'invalid_request', param: 'temperature' });
  });

  it('never echoes a long value in full', () => {
    const err = expectRefusal(() => parseChatRequest(body({ model: 7, user: 'u'.repeat(10_000) })), { code: 'invalid_request', param: 'model' });
    expect(err.message.length).toBeLessThan(200);
    const long = expectRefusal(() => parseChatRequest(body({ service_tier: ['x'.repeat(5000)] })), { code: 'invalid_request', param: 'service_tier' });
    expect(long.message).toMatch(/got an array of 1 item\.$/);
  });
});

describe('a refused body with a very long array', () => {
  const base = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
  const message = { role: 'user', content: 'hi' };

  it('is diagnosed by the first bad element alone, named where it was sent', () => {
    const messages = [...Array.from({ length: 150 }, () => message), { role: 'robot', content: 'x' }, ...Array.from({ length: 1000 }, () => 7)];
    expect(refusalOf(() => parseChatRequest({ ...base, messages })).param).toBe('messages[150].role');
    const tools = [...Array.from({ length: 70 }, () => ({ type: 'function', function: { name: 'f' } })), ...Array.from({ length: 100_000 }, () => ({}))];
    expect(refusalOf(() => parseChatRequest({ ...base, tools })).param).toBe('tools[70].type');
    expect(refusalOf(() => parseChatRequest({ ...base, stop: Array.from({ length: 100_000 }, () => 1) })).param).toBe('stop');
  });

  it('is cut just after that element before the schema sees it (zod would make an issue of every bad one)', () => {
    const stop = Array.from({ length: 100_000 }, (_, i) => (i < 3 ? 'ok' : 1));
    const schema = z.object({ stop: z.array(z.string()), messages: z.array(z.string()) });
    const cut = cutLongCollections(schema, { stop, messages: ['a'] });
    expect((cut.value as { stop: unknown[] }).stop).toEqual(['ok', 'ok', 'ok', 1]);
    expect(cut.cut).toBe(1);
    // Short arrays, and long ones with nothing bad, are diagnosed as sent.
    const fine = { stop: ['a', 'b'], messages: Array.from({ length: 100 }, () => 'm') };
    expect(cutLongCollections(schema, fine).value).toBe(fine);
  });

  it('is cut at any depth: inside a message, a tool call list, a prediction, a record', () => {
    const many = (n: number, v: unknown) => Array.from({ length: n }, () => v);
    const text = { type: 'text', text: 'a' };
    const cases: [string, Record<string, unknown>, string][] = [
      ['content', { messages: [{ role: 'user', content: [...many(80, text), 7, ...many(500_000, 7)] }] }, 'messages[0].content[80]'],
      ['tool_calls', { messages: [{ role: 'assistant', content: null, tool_calls: many(500_000, 1) }] }, 'messages[0].tool_calls[0]'],
      ['a later message', { messages: [...many(99, { role: 'user', content: 'x' }), { role: 'user', content: many(500_000, 1) }] }, 'messages[99].content[0]'],
      ['prediction', { prediction: { type: 'content', content: many(500_000, 1) } }, 'prediction.content[0]'],
    ];
    for (const [, overrides, param] of cases) {
      // Diagnosed whole, each took seconds, and the tool calls overflowed the stack (a 500).
      expect(refusalOf(() => parseChatRequest({ ...base, ...overrides })).param).toBe(param);
      expect(cutLongCollections(chatRequestSchema, { ...base, ...overrides }).cut).toBe(1);
    }
    const record = z.record(z.string(), z.number());
    const entries = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`k${i}`, i === 70 ? 'x' : i]));
    expect(Object.keys(cutLongCollections(record, entries).value as object)).toHaveLength(71);
  });

  it('leaves a union alone where the value does not pick its option', () => {
    const schema = z.union([z.array(z.number()).max(3), z.array(z.unknown())]);
    const sent = [1, 'x', ...Array.from({ length: 100 }, () => 2)];
    expect(cutLongCollections(schema, sent).cut).toBe(0);
    const parsed = safeParseCut(schema, sent);
    expect(parsed.success && parsed.data).toEqual(sent);
  });
});

describe('a strict body with a very long array (parseStrictBody)', () => {
  it('is refused by its first bad element, named where it was sent', () => {
    const input = [...Array.from({ length: 100 }, () => ({ role: 'user', content: 'x' })), 5, ...Array.from({ length: 100_000 }, () => 5)];
    expect(refusalOf(() => parseResponseRequest({ model: 'm', input })).param).toBe('input[100]');
    expect(refusalOf(() => parseResponseRequest({ model: 'm', input: 'x', include: Array.from({ length: 100_000 }, () => 1) })).param).toBe('include[0]');
  });
});
