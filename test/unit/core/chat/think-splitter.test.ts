import { describe, expect, it } from 'vitest';
import { splitThink, ThinkSplitter } from '../../../../src/core/chat/think-splitter.js';

describe('splitThink', () => {
  it('moves the think block to reasoning and keeps the answer', () => {
    expect(splitThink('<think>let me see</think>\n\nThe answer is 4.')).toEqual({ reasoning: 'let me see', content: 'The answer is 4.' });
  });

  it('leaves text without tags alone', () => {
    expect(splitThink('plain answer')).toEqual({ reasoning: '', content: 'plain answer' });
  });

  it('keeps a lone angle bracket that never becomes a tag', () => {
    expect(splitThink('a < b and <thin')).toEqual({ reasoning: '', content: 'a < b and <thin' });
  });
});

describe('ThinkSplitter across streamed deltas', () => {
  it('decides tags split across deltas without leaking fragments', () => {
    const s = new ThinkSplitter();
    const deltas = ['<th', 'ink>ste', 'p one</th', 'ink>', '\nDone', '.'];
    const out = deltas.map((d) => s.push(d));
    out.push(s.flush());
    expect(out.map((o) => o.reasoning).join('')).toBe('step one');
    expect(out.map((o) => o.content).join('')).toBe('Done.');
    expect(out.every((o) => !o.content.includes('<') && !o.reasoning.includes('<'))).toBe(true);
  });
});
