import { describe, expect, it } from 'vitest';
import { SlidingWindowCounter } from '../../../../src/core/limits/sliding-window.js';

const T0 = 1_700_000_000_000; // a bucket boundary (divisible by 100 ms)
const MINUTE = 60_000;

describe('SlidingWindowCounter', () => {
  it('counts what was added within the window', () => {
    const c = new SlidingWindowCounter(MINUTE);
    c.add(T0);
    c.add(T0 + 10_000, 2);
    expect(c.count(T0 + 20_000)).toBe(3);
  });

  it('keeps a unit for at least the whole window and releases it at most one bucket (100 ms) later', () => {
    const c = new SlidingWindowCounter(MINUTE);
    c.add(T0 + 50);
    expect(c.count(T0 + 50 + MINUTE - 1)).toBe(1);
    expect(c.count(T0 + 50 + MINUTE)).toBe(1);
    expect(c.count(T0 + 100 + MINUTE)).toBe(0);
  });

  it('never lets a fixed-window boundary double the burst: any 60 s interval holds at most the limit', () => {
    const c = new SlidingWindowCounter(MINUTE);
    const limit = 10;
    const admitted: number[] = [];
    // Offer one request every 250 ms for three minutes; admit while under the limit.
    for (let t = T0; t < T0 + 3 * MINUTE; t += 250) {
      if (c.count(t) < limit) {
        c.add(t);
        admitted.push(t);
      }
    }
    for (let i = 0; i < admitted.length; i++) {
      const start = admitted[i] ?? 0;
      const inWindow = admitted.filter((t) => t >= start && t < start + MINUTE).length;
      expect(inWindow).toBeLessThanOrEqual(limit);
    }
    // And the refill comes back within one bucket of the exact sliding log: 10 per 60.1 s at worst.
    expect(admitted.length).toBeGreaterThanOrEqual(Math.floor((3 * MINUTE) / (MINUTE + 100)) * limit);
  });

  it('says how long until the oldest counted unit leaves', () => {
    const c = new SlidingWindowCounter(MINUTE);
    expect(c.msUntilOldestLeaves(T0)).toBe(0);
    c.add(T0);
    c.add(T0 + 30_000);
    expect(c.msUntilOldestLeaves(T0 + 1000)).toBe(MINUTE + 100 - 1000);
    expect(c.msUntilOldestLeaves(T0 + MINUTE + 100)).toBe(30_000);
    expect(c.count(T0 + MINUTE + 100)).toBe(1);
  });

  it('clears everything after an idle gap longer than the window', () => {
    const c = new SlidingWindowCounter(MINUTE);
    for (let i = 0; i < 50; i++) c.add(T0 + i * 1000);
    expect(c.count(T0 + 10 * MINUTE)).toBe(0);
    expect(c.msUntilOldestLeaves(T0 + 10 * MINUTE)).toBe(0);
    c.add(T0 + 10 * MINUTE);
    expect(c.count(T0 + 10 * MINUTE)).toBe(1);
  });

  it('adds weighted units (tokens) and expires them bucket by bucket', () => {
    const c = new SlidingWindowCounter(MINUTE);
    c.add(T0, 1500);
    c.add(T0 + 20_000, 700);
    expect(c.count(T0 + 30_000)).toBe(2200);
    expect(c.count(T0 + MINUTE + 100)).toBe(700);
    expect(c.count(T0 + 20_000 + MINUTE + 100)).toBe(0);
  });

  it('treats a clock that steps back as standing still', () => {
    const c = new SlidingWindowCounter(MINUTE);
    c.add(T0 + 5000);
    c.add(T0 + 1000);
    expect(c.count(T0 + 5000)).toBe(2);
  });

  it('scales its buckets with the window (a 1 s quota window releases within 2 ms)', () => {
    const c = new SlidingWindowCounter(1000);
    c.add(T0);
    expect(c.count(T0 + 999)).toBe(1);
    expect(c.count(T0 + 1002)).toBe(0);
  });

  it('refuses a window or bucket count that is not positive', () => {
    expect(() => new SlidingWindowCounter(0)).toThrow(RangeError);
    expect(() => new SlidingWindowCounter(1000, 0)).toThrow(RangeError);
  });
});
