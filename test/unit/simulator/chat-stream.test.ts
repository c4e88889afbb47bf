import { describe, it, expect } from 'vitest';
import { planChatTurn, type PlannedTurn } from '../../../src/simulator/chat-completion.js';
import { parseChatRequest } from '../../../src/simulator/chat-request.js';
import { buildStreamTicks, delayBeforeTick, DONE_FRAME, type StreamTick } from '../../../src/simulator/chat-stream.js';
import { DEFAULT_KNOBS, type Knobs } from '../../../src/simulator/knobs.js';

interface Chunk {
  object: string;
  choices: { index: number; delta: Record<string, unknown>; logprobs: unknown; finish_reason: string | null }[];
  usage?: { completion_tokens: number };
}

function plan(body: Record<string, unknown>, knobs: Partial<Knobs> = {}, reasons = false): PlannedTurn {
  return planChatTurn(parseChatRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...body }), { ...DEFAULT_KNOBS, ...knobs }, { reasons });
}

function parse(ticks: StreamTick[]): { chunks: Chunk[]; done: boolean } {
  const frames = ticks.flat().map((f) => f.text);
  const done = frames[frames.length - 1] === DONE_FRAME;
  const chunks = frames.filter((f) => f !== DONE_FRAME).map((f) => JSON.parse(f.slice('data: '.length)) as Chunk);
  return { chunks, done };
}

describe('buildStreamTicks', () => {
  it('orders role, tokens, finish, usage, DONE', () => {
    const ticks = buildStreamTicks(plan({}, { tokens: 3 }), { id: 'x', created: 1, includeUsage: true });
    expect(ticks).toHaveLength(4);
    const { chunks, done } = parse(ticks);
    expect(done).toBe(true);
    expect(chunks.map((c) => c.object)).toEqual(Array(6).fill('chat.completion.chunk'));
    expect(chunks[0]?.choices[0]?.delta).toEqual({ role: 'assistant', content: '' });
    expect(chunks.slice(1, 4).map((c) => c.choices[0]?.delta['content'])).toHaveLength(3);
    expect(chunks[4]?.choices[0]).toEqual({ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' });
    expect(chunks[5]?.choices).toEqual([]);
    expect(chunks[5]?.usage?.completion_tokens).toBe(3);
  });

  it('omits the usage chunk unless asked', () => {
    const { chunks } = parse(buildStreamTicks(plan({}, { tokens: 2 }), { id: 'x', created: 1, includeUsage: false }));
    expect(chunks.every((c) => c.usage === undefined)).toBe(true);
  });

  it('streams reasoning before content, with null logprobs on reasoning', () => {
    const { chunks } = parse(buildStreamTicks(plan({ logprobs: true }, { tokens: 2, reasoningTokens: 2 }, true), { id: 'x', created: 1, includeUsage: false }));
    const deltas = chunks.map((c) => c.choices[0]);
    expect(Object.keys(deltas[1]?.delta ?? {})).toEqual(['reasoning_content']);
    expect(deltas[1]?.logprobs).toBeNull();
    expect(Object.keys(deltas[3]?.delta ?? {})).toEqual(['content']);
    expect(deltas[3]?.logprobs).toMatchObject({ content: [{ token: deltas[3]?.delta['content'] }], refusal: null });
  });

  it('interleaves n choices, one token each per tick', () => {
    const ticks = buildStreamTicks(plan({ n: 2 }, { tokens: 2 }), { id: 'x', created: 1, includeUsage: false });
    const indexes = ticks.map((tick) => tick.map((f) => (f.text === DONE_FRAME ? 'done' : (JSON.parse(f.text.slice(6)) as Chunk).choices[0]?.index)));
    expect(indexes).toEqual([[0, 1], [0, 1], [0, 0, 1, 1, 'done']]);
  });

  it('streams a tool call as one counted delta', () => {
    const tool = { type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'string' } } } } };
    const ticks = buildStreamTicks(plan({ tools: [tool] }), { id: 'x', created: 1, includeUsage: false });
    const counted = ticks.flat().filter((f) => f.countsForFailAfter);
    expect(counted).toHaveLength(1);
    const chunk = JSON.parse(counted[0]?.text.slice(6) ?? '') as Chunk;
    expect(chunk.choices[0]?.delta['tool_calls']).toMatchObject([{ index: 0, type: 'function', function: { name: 'f', arguments: '{"a":"sample"}' } }]);
    expect(parse(ticks).chunks.at(-1)?.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('finishes empty choices in the role tick', () => {
    const ticks = buildStreamTicks(plan({}, { tokens: 0 }), { id: 'x', created: 1, includeUsage: false });
    expect(ticks).toHaveLength(1);
    expect(parse(ticks).chunks[1]?.choices[0]?.finish_reason).toBe('stop');
  });

  it('computes per-tick delays', () => {
    const knobs = { ...DEFAULT_KNOBS, delayMs: 5, firstTokenDelayMs: 50 };
    expect([0, 1, 2, 3].map((t) => delayBeforeTick(t, knobs))).toEqual([0, 50, 5, 5]);
    expect(delayBeforeTick(1, { ...DEFAULT_KNOBS, delayMs: 5 })).toBe(5);
  });
});
