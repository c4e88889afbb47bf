import { describe, expect, it } from 'vitest';
import { withHealthyUpstreams } from '../../../../src/core/routing/eligibility.js';

const e = (id: string, status: 'active' | 'suspended' = 'active') => ({ id, status });

describe('withHealthyUpstreams', () => {
  it('leaves out endpoints with no healthy upstream server', () => {
    expect(withHealthyUpstreams([e('a'), e('b'), e('c')], (id) => id !== 'b').map((x) => x.id)).toEqual(['a', 'c']);
  });

  it('returns the same array, unallocated, while every upstream is healthy', () => {
    const all = [e('a'), e('b')];
    expect(withHealthyUpstreams(all, () => true)).toBe(all);
  });

  it('keeps every endpoint when no active one would be left: the turn fails with the upstream cause, not a 404', () => {
    const all = [e('a'), e('b', 'suspended')];
    expect(withHealthyUpstreams(all, (id) => id === 'b')).toBe(all);
    expect(withHealthyUpstreams(all, () => false)).toBe(all);
  });
});
