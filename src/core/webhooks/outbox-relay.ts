/**
 * The relay from an instance's SQLite outbox to the shared webhook store (issue 12, `storage.kind:
 * postgres`). Emitters whose state stays in the instance's SQLite file write their events there, in their
 * own transactions (outbox.ts); the subscribers are in PostgreSQL, so the relay moves each batch over:
 * append (idempotent by event id: fanned out once however often it is appended), then delete the SQLite
 * rows. A crash between the two appends the batch again, which queues nothing twice: at least once, never
 * lost, never fanned out twice. A failed append leaves the rows where they are for the next round.
 */
import type { OutboxEvent } from '../store/webhooks-store.js';

/** The SQLite side: the events waiting, oldest first, and their deletion once appended. */
export interface RelaySource {
  pending(limit: number): OutboxEvent[];
  remove(ids: readonly string[]): void;
}

export interface OutboxRelayDeps {
  readonly source: RelaySource;
  /** Returns the deliveries queued. */
  append(events: readonly OutboxEvent[]): Promise<number>;
  /** After an append queued deliveries: the dispatcher's wake-up. */
  onAppended(): void;
  /** The first failure of a run of them, and the recovery (not every retry of an outage). */
  onError(err: unknown): void;
  onRecovered(): void;
  readonly pollMs: number;
}

export interface OutboxRelay {
  /** Ask for a round soon (after an emission; never inside the emitter's transaction). */
  wake(): void;
  start(): void;
  /** Stops polling and makes a last round. */
  close(): Promise<void>;
}

const BATCH = 200;

export function createOutboxRelay(deps: OutboxRelayDeps): OutboxRelay {
  let running: Promise<void> | null = null;
  let queued = false;
  let again = false;
  let failing = false;
  let closed = false;
  let timer: NodeJS.Timeout | null = null;

  async function drain(): Promise<void> {
    for (;;) {
      const batch = deps.source.pending(BATCH);
      if (batch.length === 0) return;
      const deliveries = await deps.append(batch);
      deps.source.remove(batch.map((e) => e.id));
      if (deliveries > 0) deps.onAppended();
      if (batch.length < BATCH) return;
    }
  }

  function round(): void {
    queued = false;
    if (closed) return;
    if (running) {
      again = true;
      return;
    }
    running = drain()
      .then(
        () => {
          if (failing) deps.onRecovered();
          failing = false;
        },
        (err: unknown) => {
          if (!failing) deps.onError(err);
          failing = true;
        },
      )
      .finally(() => {
        running = null;
        if (again) {
          again = false;
          wake();
        }
      });
  }

  // Deferred: an emission calls this inside its SQLite transaction, whose rows must be committed first.
  function wake(): void {
    if (queued) return;
    queued = true;
    setImmediate(round);
  }

  return {
    wake,
    start() {
      timer = setInterval(wake, deps.pollMs);
      timer.unref();
      wake();
    },
    async close() {
      if (timer) clearInterval(timer);
      closed = true;
      await running;
      await drain().catch((err: unknown) => deps.onError(err));
    },
  };
}
