import { describe, expect, it } from 'vitest';
import { restampCompletion } from '../../../../src/core/chat/completion-restamp.js';
import { normalizeCompletion } from '../../../../src/core/chat/normalize-completion.js';
import type { TurnContext } from '../../../../src/core/chat/turn-context.js';
import { RESTAMP_CONTEXT } from '../../../helpers/turn-context.js';

const ctx: TurnContext = RESTAMP_CONTEXT;

const USAGE = '{"prompt_tokens":10,"completion_tokens":16,"total_tokens":26,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}';

const completion = (message: string, opts: { finish?: string; usage?: string; tail?: string } = {}): string =>
  `{"id":"chatcmpl-sim-1","object":"chat.completion","created":1795852789,"model":"sim","choices":[{"index":0,"message":${message},` +
  `"logprobs":null,"finish_reason":${opts.finish ?? '"stop"'}}],"usage":${opts.usage ?? USAGE}${opts.tail ?? ',"system_fingerprint":"sim"'}}`;

const now = (): number => 1_800_000_000_000;

/** What the full path would send: normalizeCompletion's body, serialized. */
function fullPath(text: string, c: TurnContext): { text: string; usage: unknown } {
  const { body, usage } = normalizeCompletion(JSON.parse(text), c, now);
  return { text: JSON.stringify(body), usage };
}

describe('the buffered fast path', () => {
  it.each([
    ['the simulator', completion('{"role":"assistant","content":"servers drop logs"}')],
    ['OpenAI', completion('{"role":"assistant","content":"Hi.","refusal":null,"annotations":[]}', { tail: ',"service_tier":"default","system_fingerprint":null' })],
    ['an empty tool_calls list', completion('{"role":"assistant","content":"x","tool_calls":[]}', { finish: '"length"', tail: '' })],
    ['escapes in the text', completion('{"role":"assistant","content":"a \\"quote\\", a \\\\ and a\\nnewline"}')],
    ['usage with the details of OpenAI', completion('{"role":"assistant","content":"x"}', { usage: '{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"prompt_tokens_details":{"cached_tokens":1,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}' })],
    ['usage with the counts alone', completion('{"role":"assistant","content":"x"}', { usage: '{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}' })],
    ['usage with only the counts', completion('{"role":"assistant","content":""}', { usage: '{"prompt_tokens":3,"completion_tokens":0}' })],
  ])('answers %s byte for byte as full normalization would', (_label, text) => {
    const fast = restampCompletion(text, ctx);
    const full = fullPath(text, ctx);
    expect(fast).not.toBeNull();
    expect(fast?.text).toBe(full.text);
    expect(fast?.usage).toEqual(full.usage);
  });

  it('keeps the upstream escapes of the text: the value is the same', () => {
    const text = completion('{"role":"assistant","content":"caf\\u00e9"}');
    const fast = restampCompletion(text, ctx);
    expect(fast?.text).toContain('"content":"caf\\u00e9"');
    expect(JSON.parse(fast?.text ?? '')).toEqual(JSON.parse(fullPath(text, ctx).text));
  });

  it.each([USAGE, '{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"completion_tokens_details":{"reasoning_tokens":7}}', '{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}'])(
    'stamps the reasoning details of a reasoning model and an adjusted effort as the full path does (usage %s)',
    (usage) => {
      const c: TurnContext = { ...ctx, reasoningModel: true, adjustedEffort: 'high', lane: 'priority' };
      const text = completion('{"role":"assistant","content":"x"}', { usage });
      expect(restampCompletion(text, c)?.text).toBe(fullPath(text, c).text);
      expect(restampCompletion(text, c)?.usage).toEqual(fullPath(text, c).usage);
    },
  );

  it.each([
    ['tool calls', completion('{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}')],
    ['reasoning', completion('{"role":"assistant","content":"x","reasoning_content":"hm"}')],
    ['an unknown message member', completion('{"role":"assistant","content":"x","audio":null}')],
    ['logprobs', completion('{"role":"assistant","content":"x"}').replace('"logprobs":null', '"logprobs":{"content":[]}')],
    ['two choices', completion('{"role":"assistant","content":"x"}').replace('}],"usage"', '},{"index":1,"message":{"role":"assistant","content":"y"},"logprobs":null,"finish_reason":"stop"}],"usage"')],
    ['no usage', '{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"logprobs":null,"finish_reason":"stop"}]}'],
    ['an unknown top-level member', completion('{"role":"assistant","content":"x"}', { tail: ',"system_fingerprint":null,"kv_transfer_params":null' })],
    ['whitespace between tokens', completion('{"role": "assistant", "content": "x"}')],
    ['an invalid escape in the text', completion('{"role":"assistant","content":"a\\xb"}')],
    ['a raw control character in the text', completion('{"role":"assistant","content":"a\u0001b"}')],
    ['a leading zero in created', completion('{"role":"assistant","content":"x"}').replace('1795852789', '0123')],
    ['a brace inside a usage string', completion('{"role":"assistant","content":"x"}', { usage: '{"prompt_tokens":1,"note":"}"}' })],
  ])('leaves %s to the full path', (_label, text) => {
    expect(restampCompletion(text, ctx)).toBeNull();
  });

  it('leaves everything to the full path when inline think tags are split', () => {
    expect(restampCompletion(completion('{"role":"assistant","content":"<think>a</think>b"}'), { ...ctx, splitInlineThink: true })).toBeNull();
  });
});
