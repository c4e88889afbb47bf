import { describe, expect, it } from 'vitest';
import { resolveServiceTier } from '../../../../src/core/chat/service-tier.js';

describe('resolveServiceTier', () => {
  it.each<[string, unknown, string, number]>([
    ['bills flex at half price', 'flex', 'flex', 0.5],
    ['bills priority at 1.25x', 'priority', 'priority', 1.25],
    ['serves default at 1x', 'default', 'default', 1],
    ['resolves auto to default', 'auto', 'default', 1],
    ['resolves scale to default', 'scale', 'default', 1],
    ['resolves an omitted tier to default', undefined, 'default', 1],
    ['resolves an unrecognized tier to default', 'platinum', 'default', 1],
    ['matches case-sensitively, so FLEX is default', 'FLEX', 'default', 1],
    ['resolves a non-string to default', 7, 'default', 1],
  ])('%s', (_, requested, lane, multiplier) => {
    expect(resolveServiceTier(requested)).toEqual({ lane, multiplier });
  });
});
