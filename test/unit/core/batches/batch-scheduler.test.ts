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

  it('awaits an asynchronous claim (PostgreSQL), one at a time, up to `concurrency` lines, each once', async () => {
    const queue: ClaimedLine[] = Array.from({ length: 6 }, (_, i) => ({ batchId: 'b', index: i }));
    let claimsOpen = 0;
    let maxClaimsOpen = 0;
    const running: (() => void)[] = [];
    const ran: number[] = [];
    const s = createBatchScheduler({
      concurrency: 2,
      claim: async (): Promise<ClaimedLine | NothingReady> => {
        claimsOpen++;
        maxClaimsOpen = Math.max(maxClaimsOpen, claimsOpen);
        await new Promise((r) => setImmediate(r));
        claimsOpen--;
        return queue.shift() ?? { waitMs: null };
      },
      run: (line) =>
        new Promise<LineRun>((resolve) => {
          ran.push(line.index);
          running.push(() => resolve({ kind: 'settled' }));
        }),
      afterLine: () => undefined,
      onError: (err) => {
        throw err;
      },
      setTimer: () => undefined,
      clearTimer: () => undefined,
    });
    s.wake();
    // A wake while a claim is out does not start a second one at once.
    s.wake();
    await new Promise((r) => setTimeout(r, 10));
    expect(s.inFlight).toBe(2);
    while (running.length > 0) {
      running.shift()?.();
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(maxClaimsOpen).toBe(1);
    expect(ran).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('closes only once a claim out at the time has been answered and its line run', async () => {
    let answer: (c: ClaimedLine | NothingReady) => void = () => undefined;
    let finish: () => void = () => undefined;
    const s = createBatchScheduler({
      concurrency: 1,
      claim: () => new Promise<ClaimedLine | NothingReady>((r) => (answer = r)),
      run: () => new Promise<LineRun>((r) => (finish = () => r({ kind: 'settled' }))),
      afterLine: () => undefined,
      onError: () => undefined,
      setTimer: () => undefined,
      clearTimer: () => undefined,
    });
    s.wake();
    let closed = false;
    const closing = s.close().then(() => (closed = true));
    // The store marked the line running: it runs although the scheduler is closing.
    answer({ batchId: 'b', index: 0 });
    await new Promise((r) => setImmediate(r));
    expect(closed).toBe(false);
    expect(s.inFlight).toBe(1);
    finish();
    await closing;
    expect(closed).toBe(true);
  });
});
