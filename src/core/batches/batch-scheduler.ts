/**
 * Runs batch lines in the background with at most `concurrency` in flight across every batch of the
 * gateway (config `batches.concurrency`), so batches never hold more of the upstream than that while
 * live requests keep theirs (docs/decisions.md "Batches").
 *
 * The store decides what runs (`claim`): it marks the line running (SQLite, or PostgreSQL shared by the
 * replicas, where one replica's claim is the only one: FOR UPDATE SKIP LOCKED) before it is dispatched,
 * so a crash between the two can only lose a line, never run it twice (the resume rule: a line found
 * running at start is failed "interrupted"). A line the rate limiters refused is handed back with a
 * time before which it is not claimed again: it waits rather than fails.
 */

/** The longest the scheduler sleeps before asking the store again. */
export const MAX_SLEEP_MS = 1000;

export interface ClaimedLine {
  readonly batchId: string;
  readonly index: number;
}

/** No line is ready: `waitMs` until the earliest deferred one is (null: none, sleep until woken). */
export interface NothingReady {
  readonly waitMs: number | null;
}

export type LineRun =
  /** Answered (by the model or with a gateway error): recorded, never run again. */
  | { readonly kind: 'settled' }
  /** Refused by a rate limiter before anything was spent: to be claimed again after `retryAfterMs`. */
  | { readonly kind: 'deferred'; readonly retryAfterMs: number };

export interface SchedulerPorts {
  readonly concurrency: number;
  /** Synchronous (SQLite) or a round trip (PostgreSQL): one claim is awaited at a time. */
  claim(): ClaimedLine | NothingReady | Promise<ClaimedLine | NothingReady>;
  /** Runs and records one line; never rejects (a failure is an outcome it records). */
  run(line: ClaimedLine): Promise<LineRun>;
  /** Called after every line, settled or deferred: the store checks whether the line's batch is done. */
  afterLine(line: ClaimedLine): void;
  onError(err: unknown): void;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

export interface BatchScheduler {
  /** New work may be ready (a batch validated, a deferred line's time came). */
  wake(): void;
  readonly inFlight: number;
  /** Stops claiming and waits for the lines in flight. */
  close(): Promise<void>;
}

/** Runs a claimed line, then its follow-up; a failure of either is reported, never thrown. */
function runLine(ports: SchedulerPorts, line: ClaimedLine): Promise<void> {
  return ports
    .run(line)
    .catch((err: unknown) => {
      ports.onError(err);
      return { kind: 'settled' } as const;
    })
    .then(() => {
      try {
        ports.afterLine(line);
      } catch (err) {
        ports.onError(err);
      }
    });
}

export function createBatchScheduler(ports: SchedulerPorts): BatchScheduler {
  let inFlight = 0;
  let closed = false;
  let timer: unknown = null;
  let idle: (() => void) | null = null;
  /** A claim awaiting the store's answer; a wake meanwhile (`again`) claims once more after it. */
  let claiming = false;
  let again = false;

  const settleIdle = (): void => {
    if (closed && inFlight === 0 && !claiming) idle?.();
  };

  /** Takes the store's answer; true when a line started and claiming may go on. */
  const take = (next: ClaimedLine | NothingReady): boolean => {
    if (!('batchId' in next)) {
      // Capped: the wait is on the injected clock, which may jump (a test clock, an NTP step).
      if (next.waitMs !== null && inFlight === 0 && !closed) timer = ports.setTimer(fill, Math.min(MAX_SLEEP_MS, Math.max(1, next.waitMs)));
      return false;
    }
    // Claimed, so marked running in the store: it runs even if the scheduler closed meanwhile.
    start(next);
    return true;
  };

  const fill = (): void => {
    if (claiming) {
      again = true;
      return;
    }
    if (timer !== null) {
      ports.clearTimer(timer);
      timer = null;
    }
    while (!closed && inFlight < ports.concurrency) {
      let next: ClaimedLine | NothingReady | Promise<ClaimedLine | NothingReady>;
      try {
        next = ports.claim();
      } catch (err) {
        ports.onError(err);
        return;
      }
      if (next instanceof Promise) {
        claiming = true;
        again = false;
        next.then(
          (answer) => {
            claiming = false;
            if (take(answer) || again) fill();
            settleIdle();
          },
          (err: unknown) => {
            claiming = false;
            ports.onError(err);
            settleIdle();
          },
        );
        return;
      }
      if (!take(next)) return;
    }
  };

  const start = (line: ClaimedLine): void => {
    inFlight++;
    void runLine(ports, line).finally(() => {
      inFlight--;
      if (closed) return settleIdle();
      fill();
    });
  };

  return {
    wake: () => {
      if (!closed) fill();
    },
    get inFlight() {
      return inFlight;
    },
    close() {
      closed = true;
      if (timer !== null) ports.clearTimer(timer);
      timer = null;
      if (inFlight === 0 && !claiming) return Promise.resolve();
      return new Promise<void>((resolve) => {
        idle = resolve;
      });
    },
  };
}
