/**
 * The pool's token counter (workers/tokens.ts). tiktoken's time grows with the square of a run without
 * whitespace and it fails past ~1M characters of one run (found from outside: two 200k-character prompts
 * held both pool threads for 36 s; an 8 MB one was a 500): such runs are counted in 128-character pieces.
 */
import { get_encoding } from 'tiktoken';
import { describe, expect, it } from 'vitest';
import countTokens from '../../../workers/tokens.js';

const exact = get_encoding('cl100k_base');
const counted = (text: string): number => countTokens({ texts: [text] })[0] ?? -1;

describe('token counts', () => {
  it('are exact for text without runs of more than 128 non-space characters', () => {
    for (const text of ['hello world', 'The quick brown fox. '.repeat(500), `${'x'.repeat(128)} and words`, '中文 字'.repeat(300), '😀 '.repeat(400)]) {
      expect(counted(text)).toBe(exact.encode(text, [], []).length);
    }
  });

  it('count a long run in pieces: high by at most one token a cut', () => {
    // 15k characters: tiktoken's exact count of the run, the reference, grows with its square.
    const run = 'abc'.repeat(5_000);
    const cuts = Math.floor(run.length / 128);
    const truth = exact.encode(run, [], []).length;
    expect(counted(run)).toBeGreaterThanOrEqual(truth);
    expect(counted(run)).toBeLessThanOrEqual(truth + cuts);
  });

  it('never cut a character in two, and count runs tiktoken itself cannot', () => {
    expect(counted('😀'.repeat(3000))).toBe(exact.encode('😀'.repeat(3000), [], []).length);
    expect(counted('a'.repeat(1_500_000))).toBeGreaterThan(0);
  });

  it('stop once the total passes stopAbove, a count that is then more than it', () => {
    // An 8 MB prompt of CJK characters held a pool thread ~10 s before its 400; the window's verdict is
    // decided long before the end of it.
    const cjk = '中文字'.repeat(300_000);
    const texts = ['hello world', cjk, cjk];
    const [first, second, third] = countTokens({ texts, stopAbove: 5_000 });
    expect(first).toBe(2);
    expect((first ?? 0) + (second ?? 0)).toBeGreaterThan(5_000);
    expect(second).toBeLessThan(5_000 + 200);
    expect(third).toBe(0);
    expect(countTokens({ texts: ['中文字'.repeat(100)], stopAbove: 5_000 })).toEqual(countTokens({ texts: ['中文字'.repeat(100)] }));
  });

  it('count long ordinary text exactly in spans, and stop inside one text once past stopAbove', () => {
    const text = 'The quick brown fox, 123 jumps. Ünïcödé 中文 😀 '.repeat(3000);
    expect(counted(text)).toBe(exact.encode(text, [], []).length);
    // 7 MB of spaced words was counted whole before the stop was looked at (6-54 s of a pool thread).
    const [n] = countTokens({ texts: ['hello world '.repeat(600_000)], stopAbove: 10_000 });
    expect(n).toBeGreaterThan(10_000);
    expect(n).toBeLessThan(20_000);
  });
});
