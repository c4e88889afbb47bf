import { describe, expect, it } from 'vitest';
import { nestsDeeperThan } from '../../src/json-depth.js';

const nested = (depth: number, open = '[', close = ']'): Buffer => Buffer.from(open.repeat(depth) + close.repeat(depth));

describe('nestsDeeperThan', () => {
  it('accepts nesting up to the limit and refuses one level more', () => {
    expect(nestsDeeperThan(nested(512), 512)).toBe(false);
    expect(nestsDeeperThan(nested(513), 512)).toBe(true);
    expect(nestsDeeperThan(nested(600, '{"a":', '}'), 512)).toBe(true);
  });

  it('counts brackets inside strings as text, escaped quotes included', () => {
    const text = Buffer.from(JSON.stringify({ s: `\\"${'['.repeat(5000)}` }));
    expect(nestsDeeperThan(text, 512)).toBe(false);
  });

  it('does not mistake many siblings for depth', () => {
    expect(nestsDeeperThan(Buffer.from(JSON.stringify(Array.from({ length: 5000 }, () => [1]))), 512)).toBe(false);
  });
});
