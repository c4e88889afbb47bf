import { afterEach, describe, expect, it, vi } from 'vitest';
import { createControllableClock } from '../../src/clock.js';

describe('the controllable clock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('follows the system clock plus every advance', () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const clock = createControllableClock();
    expect(clock.advance(5_000)).toBe(1_005_000);
    vi.advanceTimersByTime(250);
    expect(clock.now()).toBe(1_005_250);
  });

  it('stands still once frozen, moving only by advance, and runs on from there when thawed', () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const clock = createControllableClock();
    expect(clock.freeze(true)).toBe(1_000_000);
    vi.advanceTimersByTime(3_000);
    expect(clock.now()).toBe(1_000_000);
    expect(clock.advance(61_000)).toBe(1_061_000);
    expect(clock.freeze(false)).toBe(1_061_000);
    vi.advanceTimersByTime(400);
    expect(clock.now()).toBe(1_061_400);
  });
});
