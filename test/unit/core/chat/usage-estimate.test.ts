import { describe, expect, it } from 'vitest';
import { estimatedTurnUsage, textTokens, usageObjectOf } from '../../../../src/core/chat/usage.js';

describe('textTokens (usage the model server did not report)', () => {
  it('counts a one-token delta of up to 12 characters as one token, and nothing as none', () => {
    expect([0, 1, 5, 12].map(textTokens)).toEqual([0, 1, 1, 1]);
  });

  it('counts a long piece of text at about 4 characters a token, so one big chunk is not billed as one token', () => {
    expect(textTokens(16)).toBe(2);
    expect(textTokens(3000)).toBe(748);
    expect(textTokens(3 * 1024 * 1024)).toBe(786_430);
  });
});

describe('usageObjectOf', () => {
  it('gives the client the counts the ledger holds, in SPEC shape', () => {
    const usage = usageObjectOf(estimatedTurnUsage(10, 7, 3, true), true);
    expect(usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 10, total_tokens: 20, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 3 } });
    expect(usageObjectOf(estimatedTurnUsage(10, 7, 0, false), false)).toMatchObject({ completion_tokens: 7, completion_tokens_details: { reasoning_tokens: null } });
  });
});
