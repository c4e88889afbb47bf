import { describe, expect, it } from 'vitest';
import { reportedError } from '../../../../src/core/chat/reported-error.js';

describe('reportedError', () => {
  it("finds OpenAI's {error}, vLLM's {object: error} and the data of an `event: error`", () => {
    expect(reportedError({ error: { message: 'm', code: 'c' } })).toEqual({ message: 'm', code: 'c' });
    expect(reportedError({ error: 'plain text' })).toEqual({ message: 'plain text' });
    const vllm = { object: 'error', message: 'vllm stream err', type: 'BadRequestError', code: 400 };
    expect(reportedError(vllm)).toBe(vllm);
    const named = { message: 'upstream exploded', code: 'boom' };
    expect(reportedError(named, true)).toBe(named);
  });

  it('is null for a chunk, a usage chunk or a completion', () => {
    expect(reportedError({ object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 1 } })).toBeNull();
    expect(reportedError({ object: 'chat.completion', choices: [], error: null })).toBeNull();
    expect(reportedError({ message: 'not named an error' })).toBeNull();
  });
});
