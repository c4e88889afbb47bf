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

  it('releases a lone unit exactly one window after it was added', () => {
    const c = new SlidingWindowCounter(MINUTE);
    c.add(T0 + 50);
    expect(c.count(T0 + 50 + MINUTE - 1)).toBe(1);
    expect(c.count(T0 + 50 + MINUTE)).toBe(0);
  });

  it('keeps every unit of a bucket until one window after its latest: at least W, at most one bucket (100 ms) more', () => {
    const c = new SlidingWindowCounter(MINUTE);
    c.add(T0 + 1);
    c.add(T0 + 99);
    expect(c.count(T0 + 1 + MINUTE)).toBe(2);
    expect(c.count(T0 + 99 + MINUTE - 1)).toBe(2);
    expect(c.count(T0 + 99 + MINUTE)).toBe(0);
  });

  // Regression (issue 21): a bucket used to leave at its grid end, W + 100 ms after its start, so the first
  // 429 of an empty window said Retry-After: 61, which clients capped at 60 s would not wait for.
  it.each([0, 1, 37, 99, 100, 12_345, 59_999])('never makes a caller wait more than the window (first unit at +%i ms)', (start) => {
    for (const later of [0, 1, 50, 99, 100, 1000, 30_000, MINUTE - 1]) {
      const c = new SlidingWindowCounter(MINUTE);
      c.add(T0 + start);
      c.add(T0 + start + later);
      const now = T0 + start + later;
      const wait = c.msUntilOldestLeaves(now);
      expect(wait).toBeGreaterThan(0);
      expect(wait).toBeLessThanOrEqual(MINUTE);
      // And the wait is exact: the oldest unit is still counted 1 ms before it and gone at it.
      expect(c.count(now + wait - 1)).toBe(2);
      expect(c.count(now + wait)).toBeLessThan(2);
    }
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

  it('holds at most the limit in any 60 s interval under irregular arrivals within buckets', () => {
    const c = new SlidingWindowCounter(MINUTE);
    const limit = 7;
    const admitted: number[] = [];
    // A fixed pseudo-random walk (LCG): gaps of 0 to 3999 ms, so arrivals land anywhere inside buckets.
    let seed = 12345;
    let t = T0 + 37;
    for (let i = 0; i < 2000; i++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      t += seed % 4000;
      if (c.count(t) < limit) {
        c.add(t);
        admitted.push(t);
      }
    }
    for (const start of admitted) {
      expect(admitted.filter((x) => x >= start && x < start + MINUTE).length).toBeLessThanOrEqual(limit);
    }
  });

  it('says how long until the oldest counted unit leaves', () => {
    const c = new SlidingWindowCounter(MINUTE);
    expect(c.msUntilOldestLeaves(T0)).toBe(0);
    c.add(T0);
    expect(c.msUntilOldestLeaves(T0 + 1000)).toBe(MINUTE - 1000);
    c.add(T0 + 30_000);
    expect(c.msUntilOldestLeaves(T0 + 30_000)).toBe(MINUTE - 30_000);
    expect(c.msUntilOldestLeaves(T0 + MINUTE)).toBe(30_000);
    expect(c.count(T0 + MINUTE)).toBe(1);
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
    expect(c.count(T0 + MINUTE)).toBe(700);
    expect(c.count(T0 + 20_000 + MINUTE)).toBe(0);
  });

  it('treats a clock that steps back as standing still', () => {
    const c = new SlidingWindowCounter(MINUTE);
    c.add(T0 + 5000);
    c.add(T0 + 1000);
    expect(c.count(T0 + 5000)).toBe(2);
    // Both are counted from the standing clock's T0 + 5000: the wait is one window from there, no more.
    expect(c.msUntilOldestLeaves(T0 + 1000)).toBe(MINUTE);
    expect(c.count(T0 + 5000 + MINUTE)).toBe(0);
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
