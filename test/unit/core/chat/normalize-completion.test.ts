/**
 * Reasoning normalization moves inline think text out of `content`; it must not touch what it does not
 * move: a choice whose logprobs were null keeps `logprobs: null` (it became `{content: null, refusal: null}`,
 * found checking the README from a fresh clone), and filtered entries keep only delivered content.
 */
import { describe, expect, it } from 'vitest';
import { normalizeCompletion } from '../../../../src/core/chat/normalize-completion.js';
import type { TurnContext } from '../../../../src/core/chat/turn-context.js';

const ctx = (splitInlineThink: boolean): TurnContext => ({
  requestId: 'chatcmpl-1', clientModel: 'm', lane: 'default', reasoningModel: false, excludeReasoning: false, splitInlineThink, adjustedEffort: null, streamUsage: false,
});

const answer = (content: string, logprobs: unknown) => ({ id: 'x', object: 'chat.completion', created: 1, model: 'up', choices: [{ index: 0, message: { role: 'assistant', content }, logprobs, finish_reason: 'stop' }] });

describe('normalizeCompletion with reasoning normalization', () => {
  it('keeps logprobs null, split or not, with or without think text', () => {
    for (const split of [false, true]) {
      for (const content of ['hello', '<think>hm</think>hello']) {
        const { body } = normalizeCompletion(answer(content, null), ctx(split), () => 0);
        expect((body.choices as { logprobs: unknown }[])[0]?.logprobs, `${split} ${content}`).toBeNull();
      }
    }
  });

  it('moves think text to reasoning and keeps only the logprob entries of delivered content', () => {
    const tokens = ['<think>', 'hm', '</think>', 'hel', 'lo'].map((token) => ({ token, logprob: -0.1, bytes: null, top_logprobs: [] }));
    const { body } = normalizeCompletion(answer('<think>hm</think>hello', { content: tokens, refusal: null }), ctx(true), () => 0);
    const choice = (body.choices as { message: { content: string; reasoning: string }; logprobs: { content: { token: string }[] } }[])[0];
    expect(choice?.message.content).toBe('hello');
    expect(choice?.message.reasoning).toBe('hm');
    expect(choice?.logprobs.content.map((e) => e.token)).toEqual(['hel', 'lo']);
  });
});
