import { describe, expect, it } from 'vitest';
import { ChunkNormalizer } from '../../../../src/core/chat/chunk-normalizer.js';
import { ChunkRestamper, createRestamper } from '../../../../src/core/chat/chunk-restamp.js';
import type { TurnContext } from '../../../../src/core/chat/turn-context.js';
import { RESTAMP_CONTEXT } from '../../../helpers/turn-context.js';

const ctx: TurnContext = RESTAMP_CONTEXT;

const chunk = (choices: string, extra = ''): string =>
  `{"id":"up-7","object":"chat.completion.chunk","created":1700000000,"model":"sim","system_fingerprint":"fp","choices":${choices}${extra}}`;

const CONTENT = chunk('[{"index":0,"delta":{"content":" caf\\u00e9 \\"usage\\""},"logprobs":null,"finish_reason":null}]');
const ROLE = chunk('[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]');
const FINISH = chunk('[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]', ',"usage":null');

describe('the streaming fast path', () => {
  it.each([
    ['a content delta', CONTENT, true],
    ['the role delta', ROLE, false],
    ['the finish chunk with usage: null', FINISH, false],
    ['a vLLM chunk with stop_reason', chunk('[{"index":0,"delta":{"content":"x"},"logprobs":null,"finish_reason":"length","stop_reason":null}]'), true],
  ])('re-stamps %s exactly as full normalization would', (_label, data, hasContent) => {
    const fast = createRestamper(ctx)(data);
    const full = new ChunkNormalizer(ctx).normalize(JSON.parse(data) as Record<string, unknown>);
    expect(fast).not.toBeNull();
    expect(JSON.parse(fast?.chunk ?? '')).toEqual(full);
    expect(fast?.hasContent).toBe(hasContent);
  });

  it('adds x_adjusted_reasoning_effort when the effort was mapped', () => {
    const fast = createRestamper({ ...ctx, adjustedEffort: 'high' })(CONTENT);
    expect(JSON.parse(fast?.chunk ?? '')).toMatchObject({ x_adjusted_reasoning_effort: 'high', service_tier: 'flex' });
  });

  it.each([
    ['reasoning', chunk('[{"index":0,"delta":{"reasoning_content":"hm"},"logprobs":null,"finish_reason":null}]')],
    ['logprobs', chunk('[{"index":0,"delta":{"content":"a"},"logprobs":{"content":[]},"finish_reason":null}]')],
    ['a usage object', chunk('[]', ',"usage":{"prompt_tokens":1}')],
    ['an error', '{"error":{"message":"boom"}}'],
    ['an upstream service_tier', chunk('[]', ',"service_tier":"default"')],
    ['another member order', '{"object":"chat.completion.chunk","id":"x","created":1,"model":"m","choices":[]}'],
    ['two choices', chunk('[{"index":0,"delta":{},"logprobs":null,"finish_reason":null},{"index":1,"delta":{},"logprobs":null,"finish_reason":null}]')],
    ['a tool-call delta', chunk('[{"index":0,"delta":{"tool_calls":[]},"logprobs":null,"finish_reason":null}]')],
    ['pretty-printed JSON', '{ "id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [] }'],
  ])('leaves a chunk with %s to full normalization', (_label, data) => {
    expect(createRestamper(ctx)(data)).toBeNull();
  });

  it('is off when inline think text must be split', () => {
    expect(createRestamper({ ...ctx, splitInlineThink: true })(CONTENT)).toBeNull();
  });
});

// Regression: a stream whose model server closed without [DONE] after its finish and usage chunks was
// ended with an internal_error frame and billed error; a finished choice makes the stream complete.
describe('whether the stream\'s choice has finished', () => {
  const STOPPED_WITH_TEXT = chunk('[{"index":0,"delta":{"content":"x"},"logprobs":null,"finish_reason":"length","stop_reason":null}]');
  const FINISH_READS_AS_NULL = chunk('[{"index":0,"delta":{"content":"\\"finish_reason\\":null"},"logprobs":null,"finish_reason":"stop"}]');

  it('is seen on the fast path, for chat frames and for a reshaping sink', () => {
    for (const take of [(r: ChunkRestamper, d: string) => r.frame(d), (r: ChunkRestamper, d: string) => r.reshapable(d)]) {
      const r = new ChunkRestamper(ctx);
      take(r, ROLE);
      take(r, CONTENT);
      expect(r.finished).toBe(false);
      take(r, FINISH);
      expect(r.finished).toBe(true);
      for (const data of [STOPPED_WITH_TEXT, FINISH_READS_AS_NULL]) {
        const own = new ChunkRestamper(ctx);
        take(own, data);
        expect(own.finished).toBe(true);
      }
    }
  });

  it('is seen by full normalization, and not on a chunk still open', () => {
    const n = new ChunkNormalizer(ctx);
    n.normalize(JSON.parse(chunk('[{"index":0,"delta":{"reasoning_content":"hm"},"logprobs":null,"finish_reason":null}]')) as Record<string, unknown>);
    expect(n.finished).toBe(false);
    n.normalize(JSON.parse(chunk('[{"index":0,"delta":{"tool_calls":[]},"logprobs":null,"finish_reason":"tool_calls"}]')) as Record<string, unknown>);
    expect(n.finished).toBe(true);
  });
});

describe('what a reshaping sink takes of a chunk on the fast path (the Responses reply)', () => {
  it('is the body of the content string, escapes kept, for a chunk that carries nothing else', () => {
    const r = new ChunkRestamper(ctx);
    expect(r.reshapable(CONTENT)).toBe(' caf\\u00e9 \\"usage\\"');
    expect(r.hadContent).toBe(true);
    expect(r.reshapable(ROLE)).toBe('');
    expect(r.hadContent).toBe(false);
  });

  it.each([
    ['a finish reason', FINISH, false],
    ['a finish reason and content, with stop_reason', chunk('[{"index":0,"delta":{"content":"x"},"logprobs":null,"finish_reason":"length","stop_reason":null}]'), true],
    ['content that reads like the finish member', chunk('[{"index":0,"delta":{"content":"\\"finish_reason\\":null"},"logprobs":null,"finish_reason":"stop"}]'), true],
  ])('is the choices as full normalization leaves them for a chunk with %s', (_label, data, hasContent) => {
    const r = new ChunkRestamper(ctx);
    const full = new ChunkNormalizer(ctx).normalize(JSON.parse(data) as Record<string, unknown>);
    expect(r.reshapable(data)).toEqual({ choices: full?.choices });
    expect(r.hadContent).toBe(hasContent);
  });

  it.each([
    ['logprobs', chunk('[{"index":0,"delta":{"content":"a"},"logprobs":{"content":[]},"finish_reason":null}]')],
    ['a usage object', chunk('[]', ',"usage":{"prompt_tokens":1}')],
  ])('is null for a chunk with %s', (_label, data) => {
    expect(new ChunkRestamper(ctx).reshapable(data)).toBeNull();
  });

  it('is off when inline think text must be split', () => {
    expect(new ChunkRestamper({ ...ctx, splitInlineThink: true }).reshapable(CONTENT)).toBeNull();
  });
});

// Regression: a usage field the model server streamed unasked (vLLM's forced or continuous usage stats)
// reached clients that sent no stream_options.include_usage; SPEC: "otherwise it has no usage field".
describe('usage the client did not ask for', () => {
  const unasked: TurnContext = { ...ctx, streamUsage: false };
  const USAGE = chunk('[]', ',"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}');

  it('drops the usage chunk but keeps its usage for billing', () => {
    const normalizer = new ChunkNormalizer(unasked);
    expect(normalizer.normalize(JSON.parse(USAGE) as Record<string, unknown>)).toBeNull();
    expect(normalizer.usage).toMatchObject({ promptTokens: 3, completionTokens: 2, source: 'upstream' });
    expect(new ChunkNormalizer(ctx).normalize(JSON.parse(USAGE) as Record<string, unknown>)).toHaveProperty('usage.total_tokens', 5);
  });

  it('removes usage from a chunk that also carries a delta, on both paths', () => {
    const withUsage = chunk('[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}]', ',"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}');
    const normalizer = new ChunkNormalizer(unasked);
    const out = normalizer.normalize(JSON.parse(withUsage) as Record<string, unknown>);
    expect(out).not.toHaveProperty('usage');
    expect(out).toMatchObject({ choices: [{ delta: { content: 'a' } }] });
    expect(normalizer.usage).toMatchObject({ promptTokens: 3 });

    const fast = createRestamper(unasked)(FINISH);
    const full = new ChunkNormalizer(unasked).normalize(JSON.parse(FINISH) as Record<string, unknown>);
    expect(JSON.parse(fast?.chunk ?? '')).not.toHaveProperty('usage');
    expect(JSON.parse(fast?.chunk ?? '')).toEqual(full);
  });
});

describe('the usage chunk on the fast path', () => {
  const usageChunk = (usage: string, extra = ''): string => chunk('[]', `,"usage":${usage}${extra}`);
  const SIM = '{"prompt_tokens":6,"completion_tokens":3,"total_tokens":9,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}';
  const cases: [string, TurnContext, string][] = [
    ['the three counts', ctx, '{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}'],
    ['cached and reasoning details', ctx, SIM],
    ['a reasoning model', { ...ctx, reasoningModel: true }, SIM],
    ['an adjusted effort', { ...ctx, adjustedEffort: 'high' }, SIM],
    ['members in another order (parsed)', ctx, '{"total_tokens":5,"completion_tokens":2,"prompt_tokens":3,"prompt_tokens_details":{"cached_tokens":1,"audio_tokens":0}}'],
  ];

  it.each(cases)('writes the bytes full normalization writes: %s', (_label, turn, usage) => {
    const data = usageChunk(usage);
    const normalizer = new ChunkNormalizer(turn);
    const full = normalizer.normalize(JSON.parse(data) as Record<string, unknown>);
    const fast = new ChunkRestamper(turn).usageFrame(data);
    expect(fast?.frame).toBe(`data: ${JSON.stringify(full)}\n\n`);
    expect(fast?.usage).toEqual(normalizer.usage);
    expect(fast?.usageJson).toBe(JSON.stringify(full?.usage));
  });

  it('sends nothing but keeps the usage when the client did not ask for it', () => {
    const unasked: TurnContext = { ...ctx, streamUsage: false };
    const normalizer = new ChunkNormalizer(unasked);
    expect(normalizer.normalize(JSON.parse(usageChunk(SIM)) as Record<string, unknown>)).toBeNull();
    const fast = new ChunkRestamper(unasked).usageFrame(usageChunk(SIM));
    expect(fast).toMatchObject({ frame: null, usage: normalizer.usage });
  });

  it.each([
    ['an upstream service_tier', usageChunk(SIM, ',"service_tier":"default"')],
    ['a choice beside the usage', chunk('[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]', `,"usage":${SIM}`)],
    ['usage nested deeper', usageChunk('{"prompt_tokens":1,"x":{"y":{"z":1}}}')],
    ['usage that is not JSON', usageChunk('{"prompt_tokens":1,}')],
  ])('leaves a chunk with %s to full normalization', (_label, data) => {
    expect(new ChunkRestamper(ctx).usageFrame(data)).toBeNull();
  });
});
