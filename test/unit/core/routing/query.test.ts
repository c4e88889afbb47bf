import { describe, expect, it } from 'vitest';
import { affinityKey, composeQuery, estimateInputTokens, MAX_QUERY_CHARS, queryPreview, requestNeeds } from '../../../../src/core/routing/query.js';

const user = (content: unknown) => ({ role: 'user', content });
const assistant = (content: unknown, extra: Record<string, unknown> = {}) => ({ role: 'assistant', content, ...extra });
const system = (content: string) => ({ role: 'system', content });

describe('composeQuery', () => {
  it('reads the whole thread: user and assistant turns, oldest first, text parts included', () => {
    const q = composeQuery([system('You are terse.'), user('first question'), assistant('an answer'), user([{ type: 'text', text: 'part one' }, { type: 'image_url', image_url: { url: 'data:,' } }, { type: 'text', text: 'part two' }])]);
    expect(q).toBe('first question\nan answer\npart one\npart two');
  });

  it('leaves system, developer and tool turns out', () => {
    expect(composeQuery([system('sys'), { role: 'developer', content: 'dev' }, { role: 'tool', content: '{"x":1}' }, user('hi')])).toBe('hi');
  });

  it('keeps the newest text when the thread is too long', () => {
    const q = composeQuery([user('a'.repeat(MAX_QUERY_CHARS)), user('latest')]);
    expect(q.length).toBe(MAX_QUERY_CHARS);
    expect(q.endsWith('\nlatest')).toBe(true);
  });
});

describe('affinityKey (SPEC behaviour 6)', () => {
  it('uses X-Conversation-Id when sent, whatever the messages', () => {
    expect(affinityKey('conv-1', [user('a')])).toBe(affinityKey('conv-1', [user('b'), assistant('c')]));
    expect(affinityKey('conv-1', [user('a')])).not.toBe(affinityKey('conv-2', [user('a')]));
    expect(affinityKey('conv-1', [user('a')])).not.toContain('conv-1');
  });

  it('derives the key from the first user text and the opening of the first later turn', () => {
    const turn2 = [user('plan my trip'), assistant('Sure, where to?'), user('lisbon')];
    const turn3 = [...turn2, assistant('Lisbon it is.'), user('and hotels?')];
    expect(affinityKey(undefined, turn2)).not.toBeNull();
    expect(affinityKey(undefined, turn3)).toBe(affinityKey(undefined, turn2));
    expect(affinityKey(undefined, [user('plan my trip'), assistant('Other reply'), user('lisbon')])).not.toBe(affinityKey(undefined, turn2));
  });

  it('never lets system or developer turns into the key', () => {
    const base = [user('plan my trip'), assistant('Sure, where to?'), user('lisbon')];
    const withInstructions = [system('be nice'), user('plan my trip'), { role: 'developer', content: 'x' }, system('late'), assistant('Sure, where to?'), user('lisbon')];
    expect(affinityKey(undefined, withInstructions)).toBe(affinityKey(undefined, base));
  });

  it('skips user turns without text when looking for the first one', () => {
    const imageFirst = [user([{ type: 'image_url', image_url: { url: 'data:,' } }]), user('describe it'), assistant('A cat.')];
    expect(affinityKey(undefined, imageFirst)).toBe(affinityKey(undefined, [user('describe it'), assistant('A cat.')]));
  });

  it('has no derived key for a single-turn thread', () => {
    expect(affinityKey(undefined, [system('s'), user('hello')])).toBeNull();
    expect(affinityKey('  ', [user('hello')])).toBeNull();
  });

  it('uses the tool calls of an assistant turn without text as its opening', () => {
    const call = (name: string) => [user('weather?'), assistant(null, { tool_calls: [{ id: 'c', type: 'function', function: { name, arguments: '{}' } }] })];
    expect(affinityKey(undefined, call('a'))).not.toBe(affinityKey(undefined, call('b')));
  });
});

describe('estimates and needs', () => {
  it('over-estimates input tokens from UTF-8 bytes, plus framing', () => {
    // 30 bytes / 3 = 10, plus 3 per request and 4 per message.
    expect(estimateInputTokens({ messages: [{ content: 'x'.repeat(30) }] })).toBe(17);
    expect(estimateInputTokens({ messages: [{ content: 'é'.repeat(15) }] })).toBe(17);
  });

  it('reads the modalities, tools, tool history and json formats a request needs', () => {
    expect(requestNeeds({ messages: [user([{ type: 'image_url' }, { type: 'input_audio' }])] })).toMatchObject({ vision: true, audioInput: true, videoInput: false, tools: false });
    expect(requestNeeds({ messages: [user('x')], tools: [{}] })).toMatchObject({ tools: true, toolsDeclared: true });
    expect(requestNeeds({ messages: [user('x')], x_exec: true })).toMatchObject({ tools: true, toolsDeclared: false, execTools: true });
    expect(requestNeeds({ messages: [user('x')], x_exec: false })).toMatchObject({ tools: false, execTools: false });
    expect(requestNeeds({ messages: [user('x'), { role: 'tool', content: 'r' }] })).toMatchObject({ tools: true, toolsDeclared: false });
    expect(requestNeeds({ messages: [user('x')], tools: [] }).tools).toBe(false);
    expect(requestNeeds({ messages: [user('x')], response_format: { type: 'json_schema' } }).structuredOutput).toBe(true);
    expect(requestNeeds({ messages: [user('x')], response_format: { type: 'text' } }).structuredOutput).toBe(false);
  });

  it('records the latest user text, at most 500 characters, as the preview', () => {
    expect(queryPreview([user('old'), assistant('a'), user('new question')])).toBe('new question');
    expect(queryPreview([user('y'.repeat(800))])).toHaveLength(500);
    expect(queryPreview([system('only system')])).toBe('');
  });
});
