import { describe, expect, it } from 'vitest';
import { createAffinityMap } from '../../../../src/core/routing/affinity-map.js';

describe('affinity map', () => {
  it('remembers a conversation until its time to live passes', () => {
    const map = createAffinityMap({ maxEntries: 10, ttlMs: 1000 });
    map.set('k', 'ep-1', 0);
    expect(map.get('k', 999)).toBe('ep-1');
    expect(map.get('k', 1000)).toBeNull();
  });

  it('renews the time to live when a conversation is routed again', () => {
    const map = createAffinityMap({ maxEntries: 10, ttlMs: 1000 });
    map.set('k', 'ep-1', 0);
    map.set('k', 'ep-2', 900);
    expect(map.get('k', 1500)).toBe('ep-2');
  });

  it('drops the least recently used conversation past its bound', () => {
    const map = createAffinityMap({ maxEntries: 2, ttlMs: 1000 });
    map.set('a', '1', 0);
    map.set('b', '2', 0);
    expect(map.get('a', 1)).toBe('1');
    map.set('c', '3', 2);
    expect(map.size).toBe(2);
    expect(map.get('b', 3)).toBeNull();
    expect(map.get('a', 3)).toBe('1');
  });
});
