/** The shared throttle table (issue 31): names from many workers, slots reused once idle, overflow per worker. */
import { describe, expect, it } from 'vitest';
import { CounterThrottles } from '../../../../src/core/limits/counter-throttles.js';
import { createSharedCounterBuffer, SharedCounterTable } from '../../../../src/coordination/shared-memory/shared-counter-table.js';
import { createSharedThrottleBuffer, SharedThrottleTable } from '../../../../src/coordination/shared-memory/shared-throttle-table.js';

const W = 60_000;

/** Two workers' views of one table of 16 slots (every name probes all of them). */
function twoWorkers(onFull: () => void = () => undefined): [CounterThrottles, CounterThrottles] {
  const counters = createSharedCounterBuffer(4);
  const buffer = createSharedThrottleBuffer(16);
  const view = (tag: number): CounterThrottles => new CounterThrottles(new SharedThrottleTable(buffer, new SharedCounterTable(counters, { tag }).lock, onFull));
  return [view(1), view(2)];
}

describe('SharedThrottleTable', () => {
  it('counts a name once for every worker', () => {
    const [a, b] = twoWorkers();
    expect(a.reserveNow([{ name: 'x', limit: 2 }], W, 0).admitted).toBe(true);
    expect(b.reserveNow([{ name: 'x', limit: 2 }], W, 1).admitted).toBe(true);
    // Both units share a 1-second bucket, which leaves a window after its latest unit (at 1).
    expect(a.reserveNow([{ name: 'x', limit: 2 }], W, 2)).toEqual({ admitted: false, waitMs: W - 1 });
  });

  it('gives a worker its own counter when every slot is busy, and reuses a slot once its counter is idle', () => {
    let full = 0;
    const [a, b] = twoWorkers(() => (full += 1));
    for (let i = 0; i < 16; i++) expect(a.reserveNow([{ name: `busy-${i}`, limit: 1 }], W, 0).admitted).toBe(true);
    expect(a.reserveNow([{ name: 'late', limit: 1 }], W, 1).admitted).toBe(true);
    expect(full).toBe(1);
    // The overflow counter is the asking worker's own: the other worker does not see it.
    expect(b.reserveNow([{ name: 'late', limit: 1 }], W, 1).admitted).toBe(true);
    // A window later every slot is idle: a new name takes one over, shared again.
    expect(a.reserveNow([{ name: 'later', limit: 1 }], W, W + 1).admitted).toBe(true);
    expect(b.reserveNow([{ name: 'later', limit: 1 }], W, W + 1).admitted).toBe(false);
  });

  it('never gives two names of one reservation the same slot', () => {
    const [a] = twoWorkers();
    for (let i = 0; i < 16; i++) a.reserveNow([{ name: `old-${i}`, limit: 5 }], W, 0);
    // All idle now; old-0 is found (and touched), so the new name must take another slot.
    expect(a.reserveNow([{ name: 'old-0', limit: 5 }, { name: 'new', limit: 5 }], W, W + 1).admitted).toBe(true);
    expect(a.reserveNow([{ name: 'new', limit: 2 }], W, W + 2).admitted).toBe(true);
    expect(a.reserveNow([{ name: 'old-0', limit: 2 }], W, W + 2).admitted).toBe(true);
  });
});
