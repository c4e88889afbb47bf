/**
 * The hot-path acceptor (src/schemas/by-field.ts) must never disagree with the whole schema: whatever it
 * accepts, the schema accepts with the same output; whatever the schema refuses, it does not accept. Checked
 * over a valid request carrying every field, and over every single-field mutation of it to a value from a
 * pool of wrong and edge values.
 */
import { describe, expect, it } from 'vitest';
import { NOT_ACCEPTED } from '../../../src/schemas/by-field.js';
import { acceptChatRequest, chatRequestSchema, parseChatRequest } from '../../../src/schemas/chat-request.js';

type Body = Record<string, unknown>;

const TOOL = { type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object' }, strict: true } };
const CALL = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } };

const MESSAGES: Body[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'developer', content: [{ type: 'text', text: 'English.' }], name: 'ops' },
  {
    role: 'user',
    name: 'ada',
    content: [
      { type: 'text', text: 'What is in these?' },
      { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'high' } },
      { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
      { type: 'video_url', video_url: { url: 'https://example.com/clip.mp4' } },
    ],
  },
  { role: 'assistant', content: null, tool_calls: [CALL] },
  { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 3}' },
  { role: 'assistant', content: [{ type: 'refusal', refusal: 'No.' }] },
  { role: 'assistant', content: null, refusal: 'No.', function_call: null },
  { role: 'user', content: '', x_vendor: { keep: true } },
];

const RICH: Body = {
  model: 'gpt-anything',
  messages: MESSAGES,
  functions: null,
  function_call: null,
  max_tokens: 100,
  max_completion_tokens: 200,
  temperature: 1.5,
  top_p: 0.5,
  stream: true,
  stream_options: { include_usage: true },
  stop: ['END', ''],
  frequency_penalty: -2,
  presence_penalty: 2,
  top_k: 0,
  min_p: 1,
  repetition_penalty: 1.05,
  n: 1,
  seed: 42,
  logprobs: true,
  top_logprobs: 20,
  logit_bias: { '50256': -100 },
  tools: [TOOL],
  tool_choice: { type: 'function', function: { name: 'get_weather' } },
  parallel_tool_calls: false,
  response_format: { type: 'json_schema', json_schema: { name: 'weather', schema: { type: 'object' } } },
  metadata: { team: 'a' },
  user: 'user-1234',
  store: false,
  service_tier: 'flex',
  reasoning_effort: 'low',
  reasoning: { effort: 'low', enabled: true, max_tokens: 100, exclude: false },
  include_reasoning: true,
  prediction: { type: 'content', content: 'x' },
  modalities: ['text', 'audio'],
  audio: { voice: 'alloy', format: 'wav' },
  x_unknown: [1, 'two'],
};

const POOL: unknown[] = [null, 0, 1, 2, -1, 1.5, 129, 1e300, '', 'x', 'none', 'auto', 'function', 'user', true, false, [], [''], [{}], {}, { type: 'text' }];

/** The verdict of both parsers on one body; fails the test on any disagreement. */
function agree(body: Body): 'accepted' | 'left to the schema' | 'refused' {
  const whole = chatRequestSchema.safeParse(body);
  const fast = acceptChatRequest(body);
  if (!whole.success) {
    expect(fast, `accepted what the schema refuses: ${JSON.stringify(body).slice(0, 300)}`).toBe(NOT_ACCEPTED);
    return 'refused';
  }
  if (fast === NOT_ACCEPTED) return 'left to the schema';
  expect(fast).toStrictEqual(whole.data);
  return 'accepted';
}

function mutations(): Body[] {
  const out: Body[] = [];
  for (const field of Object.keys(RICH)) {
    for (const value of POOL) out.push({ ...RICH, [field]: value });
    const rest = { ...RICH };
    delete rest[field];
    out.push(rest);
  }
  MESSAGES.forEach((message, i) => {
    for (const field of [...Object.keys(message), 'role', 'content', 'name', 'tool_call_id', 'tool_calls', 'refusal', 'function_call']) {
      for (const value of POOL) {
        const messages = MESSAGES.slice();
        messages[i] = { ...message, [field]: value };
        out.push({ ...RICH, messages });
      }
    }
  });
  return out;
}

describe('the chat request acceptor', () => {
  it('accepts a request carrying every field, as the schema reads it', () => {
    expect(agree(RICH)).toBe('accepted');
  });

  it('accepts the common small requests itself', () => {
    for (const body of [
      { model: 'm', messages: [{ role: 'user', content: 'hello' }] },
      { model: 'm', messages: [{ role: 'user', content: 'hello' }], stream: true, stream_options: { include_usage: true } },
      { model: 'm', messages: [{ role: 'user', content: 'hi' }], temperature: null, max_tokens: null, tools: null },
    ]) {
      expect(agree(body)).toBe('accepted');
    }
  });

  it('never disagrees with the schema over every single-field mutation', () => {
    const verdicts = { accepted: 0, 'left to the schema': 0, refused: 0 };
    for (const body of mutations()) verdicts[agree(body)] += 1;
    // Both kinds occur, so the comparison above was exercised both ways.
    expect(verdicts.accepted).toBeGreaterThan(100);
    expect(verdicts.refused).toBeGreaterThan(1000);
  });

  it('leaves a __proto__ key to the schema rather than copying it onto a prototype', () => {
    const body = JSON.parse('{"model":"m","messages":[{"role":"user","content":"x"}],"__proto__":{"polluted":true}}') as Body;
    expect(acceptChatRequest(body)).toBe(NOT_ACCEPTED);
    expect((parseChatRequest(body) as Body)['polluted']).toBeUndefined();
  });
});
