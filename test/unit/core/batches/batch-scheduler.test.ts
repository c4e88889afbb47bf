import { describe, expect, it } from 'vitest';
import { createBatchScheduler, type ClaimedLine, type LineRun, type NothingReady } from '../../../../src/core/batches/batch-scheduler.js';

interface Pending {
  line: ClaimedLine;
  resolve: (r: LineRun) => void;
}

function harness(lines: number, concurrency: number) {
  const queue: ClaimedLine[] = Array.from({ length: lines }, (_, i) => ({ batchId: 'b', index: i }));
  const running: Pending[] = [];
  const timers: { fn: () => void; ms: number }[] = [];
  let maxInFlight = 0;
  const after: number[] = [];
  const scheduler = createBatchScheduler({
    concurrency,
    claim: (): ClaimedLine | NothingReady => queue.shift() ?? { waitMs: null },
    run: (line) =>
      new Promise<LineRun>((resolve) => {
        running.push({ line, resolve });
        maxInFlight = Math.max(maxInFlight, running.length);
      }),
    afterLine: (line) => after.push(line.index),
    onError: (err) => {
      throw err;
    },
    setTimer: (fn, ms) => timers.push({ fn, ms }),
    clearTimer: () => undefined,
  });
  const finishOne = async (r: LineRun = { kind: 'settled' }) => {
    const p = running.shift();
    p?.resolve(r);
    await new Promise((res) => setImmediate(res));
  };
  return { scheduler, queue, running, timers, after, finishOne, maxInFlight: () => maxInFlight };
}

describe('the batch scheduler', () => {
  it('never has more than `concurrency` lines in flight and runs every line once', async () => {
    const h = harness(10, 3);
    h.scheduler.wake();
    expect(h.running.length).toBe(3);
    while (h.running.length > 0) await h.finishOne();
    expect(h.maxInFlight()).toBe(3);
    expect(h.after.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('sleeps until the earliest deferred line is ready when nothing else is, a second at most', () => {
    const timers: { ms: number }[] = [];
    const s = createBatchScheduler({
      concurrency: 2,
      claim: () => ({ waitMs: 1500 }),
      run: () => Promise.resolve({ kind: 'settled' }),
      afterLine: () => undefined,
      onError: () => undefined,
      setTimer: (_fn, ms) => timers.push({ ms }),
      clearTimer: () => undefined,
    });
    s.wake();
    // At most a second: the wait is on the injected clock, which may jump.
    expect(timers).toEqual([{ ms: 1000 }]);
  });

  it('claims nothing more once closed, and close waits for the lines in flight', async () => {
    const h = harness(5, 2);
    h.scheduler.wake();
    let closed = false;
    const closing = h.scheduler.close().then(() => (closed = true));
    await h.finishOne();
    expect(closed).toBe(false);
    expect(h.running.length).toBe(1);
    await h.finishOne();
    await closing;
    expect(closed).toBe(true);
    expect(h.queue.length).toBe(3);
  });
});
