/**
 * The delivery dispatcher: works the outbox's due deliveries without blocking the event loop.
 *
 * Rows are claimed (selected and marked `sending` in one store transaction, so nothing is claimed twice,
 * by this dispatcher or by another instance's on the same store) two ways:
 *  - a global tick (every `pollMs`, on `wake()` after an emission, and again after a full batch) takes
 *    due rows oldest first across endpoints, skipping endpoints whose share is claimed;
 *  - a per-endpoint refill, once half an endpoint's share is free again, takes that endpoint's next due
 *    rows through its own index. With one busy endpoint, a global query would walk past every one of its
 *    queued rows each time; the refill does not.
 * A claimed batch is signed by one pool task, then each attempt waits for an HTTP slot: at most
 * `maxInFlight` requests open overall and `perWebhookInFlight` per endpoint, so one slow receiver cannot
 * take every slot. Up to as many again are claimed and signed ahead, so the pool hop (slow on a busy
 * core: the worker runs reniced) overlaps requests instead of adding to each one; a signature is at most
 * one queue wait old when sent, far inside the receivers' 300 s tolerance.
 * Outcomes are buffered and written in one small transaction per `flushMs` or FLUSH_MAX results. Due
 * times are compared against the injected clock at every claim (no long timers): a test that moves the
 * clock sees retries go out at the next poll.
 *
 * At least once: a row stays `sending`, claimed by this instance with a lease the store keeps renewed,
 * until its outcome is committed. A claim whose instance died (or whose lease ran out) is given back to
 * `pending` by `releaseAbandoned`, at `start()` and at every heartbeat of any instance, so an attempt lost
 * to a crash is made again by whichever instance claims it next. Its outcome was never recorded, so it
 * does not count as made.
 *
 * The store answers synchronously (SQLite: the answer is used at once, as it always was) or with a
 * promise (PostgreSQL, a round trip). Claims are then one at a time: a tick or refill asked for while a
 * claim is in flight runs when it settles, so two claims never both count on the same free capacity.
 */
import type { AttemptOutcome, DeliveryResult, DueDelivery, WebhookAttempt } from './delivery.js';
import { resultOf, SECRET_UNREADABLE } from './delivery-outcome.js';
import { ResultWriter } from './result-writer.js';
import { messageOf, onAnswer, type StoreAnswer } from './store-answer.js';

export type { StoreAnswer } from './store-answer.js';

export interface DispatchStore {
  /** Puts rows whose claimant is gone (or whose claim lease ran out) back to `pending`; returns how many. */
  releaseAbandoned(): StoreAnswer<number>;
  /** Extends this instance's claims by a lease; returns how many. */
  renewClaims(): StoreAnswer<number>;
  /**
   * Claims (marks `sending` for this instance) the rows `pick` chooses among up to `limit` due rows of
   * active endpoints, oldest due first, skipping the listed webhooks; atomically. `seen`: the candidates.
   */
  claimDue(now: number, limit: number, skipWebhooks: readonly string[], pick: (candidates: DueDelivery[]) => DueDelivery[]): StoreAnswer<{ claimed: DueDelivery[]; seen: number }>;
  /** Claims up to `limit` of one endpoint's due rows, oldest due first. */
  claimDueFor(webhookId: string, now: number, limit: number): StoreAnswer<DueDelivery[]>;
  /** Writes outcomes of rows this instance still holds; others are someone else's now, and skipped. */
  recordResults(results: readonly DeliveryResult[], now: number): StoreAnswer<void>;
}

export interface DispatcherDeps {
  readonly store: DispatchStore;
  /** `sha256=<hex>` per item, in order (the worker pool). */
  sign(items: readonly { secret: string; timestamp: number; body: string }[]): Promise<string[]>;
  send(attempt: WebhookAttempt): Promise<AttemptOutcome>;
  now(): number;
  readonly retryScheduleMs: readonly number[];
  readonly maxInFlight: number;
  readonly perWebhookInFlight: number;
  readonly pollMs: number;
  readonly flushMs?: number;
  onEvent?(event: DispatcherEvent): void;
}

export type DispatcherEvent =
  /** Deliveries a stopped instance had claimed, given back to be sent again. */
  | { readonly kind: 'resumed'; readonly count: number }
  | {
      readonly kind: 'attempt';
      readonly deliveryId: string;
      readonly webhookId: string;
      /** 1 for the first attempt. */
      readonly attempt: number;
      readonly ok: boolean;
      readonly httpStatus: number | null;
      readonly error: string | null;
      /** What the delivery is now: delivered, retry scheduled (pending) or failed for good. */
      readonly state: string;
    }
  | { readonly kind: 'failed_permanently'; readonly deliveryId: string; readonly webhookId: string; readonly error: string | null }
  | { readonly kind: 'error'; readonly message: string };

export interface Dispatcher {
  start(): void;
  /** Ask for a tick soon (after an emission commits). */
  wake(): void;
  /**
   * At each heartbeat of this instance: extends its claims, and gives back those of instances gone since
   * (then claims them, or a sibling does).
   */
  keepClaims(): void;
  /** Rows claimed and not settled yet (signing, waiting for a slot, or sending). */
  readonly inFlight: number;
  /** Stops claiming and sending, waits up to `waitMs` for requests open, writes their outcomes. */
  close(waitMs: number): Promise<void>;
}

interface Ready {
  readonly row: DueDelivery;
  readonly attempt: WebhookAttempt;
}

export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  return new DeliveryDispatcher(deps);
}

const bump = (m: Map<string, number>, id: string, by: number): number => {
  const n = (m.get(id) ?? 0) + by;
  if (n <= 0) m.delete(id);
  else m.set(id, n);
  return n;
};

/**
 * The state is counts of claims and open requests, overall and per endpoint (`claimCap` claimed and
 * `shareCap` sending per endpoint at most), signed attempts waiting for a slot, and the one claim in flight.
 */
class DeliveryDispatcher implements Dispatcher {
  readonly #deps: DispatcherDeps;
  readonly #shareCap: number;
  readonly #claimCap: number;
  readonly #results: ResultWriter;
  readonly #claimedBy = new Map<string, number>();
  readonly #sendingBy = new Map<string, number>();
  readonly #ready = new Map<string, Ready[]>();
  #claimed = 0;
  #sending = 0;
  #pollTimer: NodeJS.Timeout | null = null;
  #tickQueued = false;
  readonly #refills = new Set<string>();
  #refillQueued = false;
  #closed = false;
  #idle: (() => void) | null = null;
  /** An asynchronous claim in flight, and whether a tick was asked for meanwhile. */
  #claiming: Promise<void> | null = null;
  #tickAgain = false;

  constructor(deps: DispatcherDeps) {
    this.#deps = deps;
    this.#shareCap = deps.perWebhookInFlight;
    this.#claimCap = this.#shareCap * 2;
    this.#results = new ResultWriter({ recordResults: (results, now) => deps.store.recordResults(results, now), now: () => deps.now(), flushMs: deps.flushMs ?? 10, reportError: (message) => this.#report({ kind: 'error', message }) });
  }

  start(): void {
    onAnswer(
      this.#deps.store.releaseAbandoned(),
      (resumed) => {
        if (resumed > 0) this.#report({ kind: 'resumed', count: resumed });
      },
      (err) => this.#report({ kind: 'error', message: `resuming deliveries left in flight failed: ${messageOf(err)}` }),
    );
    this.#pollTimer = setInterval(this.wake, this.#deps.pollMs);
    this.#pollTimer.unref();
    this.wake();
  }

  readonly wake = (): void => {
    if (this.#tickQueued || this.#closed) return;
    this.#tickQueued = true;
    setImmediate(this.#tick);
  };

  keepClaims(): void {
    if (this.#results.stopped) return;
    const failed = (err: unknown): void => this.#report({ kind: 'error', message: `keeping delivery claims failed: ${messageOf(err)}` });
    const released = (count: number): void => {
      if (count > 0) {
        this.#report({ kind: 'resumed', count });
        this.wake();
      }
    };
    try {
      onAnswer(this.#deps.store.renewClaims(), () => void onAnswer(this.#deps.store.releaseAbandoned(), released, failed), failed);
    } catch (err) {
      failed(err);
    }
  }

  get inFlight(): number {
    return this.#claimed;
  }

  async close(waitMs: number): Promise<void> {
    this.#closed = true;
    if (this.#pollTimer) clearInterval(this.#pollTimer);
    await this.#claiming;
    // Signed but never sent: back to pending now, rather than at the next start.
    for (const queue of this.#ready.values()) this.#giveBack(queue.splice(0).map((r) => r.row));
    if (this.#claimed > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        this.#idle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    await this.#results.close();
  }

  #report(event: DispatcherEvent): void {
    this.#deps.onEvent?.(event);
  }

  /**
   * Asks the store for rows to claim and hands them to `then`. A synchronous store's error reaches the
   * caller's catch; an asynchronous claim blocks the next one until it settles.
   */
  #claimWith<T>(answer: StoreAnswer<T>, then: (value: T) => void, failure: string): void {
    const pending = onAnswer(answer, then, (err) => this.#report({ kind: 'error', message: `${failure}: ${messageOf(err)}` }));
    if (!pending) return;
    this.#claiming = pending.finally(() => {
      this.#claiming = null;
      if (this.#tickAgain) {
        this.#tickAgain = false;
        this.wake();
      }
      if (this.#refills.size > 0 && !this.#refillQueued) {
        this.#refillQueued = true;
        setImmediate(this.#runRefills);
      }
    });
  }

  /** A claimed row is done (settled or given back): frees its claim; refills its endpoint when half free. */
  #unclaim(row: DueDelivery, refill: boolean): void {
    this.#claimed -= 1;
    const n = bump(this.#claimedBy, row.webhookId, -1);
    if (this.#claimed === 0) this.#idle?.();
    if (refill && !this.#closed && this.#claimCap - n >= this.#shareCap) this.#queueRefill(row.webhookId);
  }

  /** Claimed rows that will not be attempted now go back to `pending`, their attempt not counted. */
  #giveBack(rows: readonly DueDelivery[]): void {
    for (const r of rows) {
      this.#results.queue({ seq: r.seq, kind: 'released' });
      this.#unclaim(r, false);
    }
  }

  #settle(row: DueDelivery, outcome: AttemptOutcome): void {
    const result = resultOf(row, outcome, this.#deps.now(), this.#deps.retryScheduleMs);
    this.#report({
      kind: 'attempt',
      deliveryId: row.id,
      webhookId: row.webhookId,
      attempt: row.attemptCount + 1,
      ok: outcome.ok,
      httpStatus: outcome.httpStatus,
      error: outcome.errorMessage,
      state: 'state' in result ? result.state : 'released',
    });
    if (result.state === 'failed') this.#report({ kind: 'failed_permanently', deliveryId: row.id, webhookId: row.webhookId, error: outcome.errorMessage });
    this.#results.queue(result);
  }

  /** Starts the endpoint's signed attempts while it and the whole dispatcher have open slots. */
  #pump(webhookId: string): void {
    const queue = this.#ready.get(webhookId);
    while (!this.#closed && queue && queue.length > 0 && this.#sending < this.#deps.maxInFlight && (this.#sendingBy.get(webhookId) ?? 0) < this.#shareCap) {
      const { row, attempt } = queue.shift() as Ready;
      this.#sending += 1;
      bump(this.#sendingBy, webhookId, 1);
      void this.#deps
        .send(attempt)
        .catch((err: unknown): AttemptOutcome => ({ ok: false, httpStatus: null, responseBody: null, errorMessage: String(err) }))
        .then((outcome) => this.#sent(row, outcome));
    }
    if (queue && queue.length === 0) this.#ready.delete(webhookId);
  }

  #sent(row: DueDelivery, outcome: AttemptOutcome): void {
    const { webhookId } = row;
    this.#sending -= 1;
    bump(this.#sendingBy, webhookId, -1);
    this.#settle(row, outcome);
    this.#unclaim(row, true);
    this.#pump(webhookId);
    // A slot freed overall: endpoints held back by the global cap go next.
    for (const [id, q] of this.#ready) if (q.length > 0 && id !== webhookId) this.#pump(id);
  }

  async #startAttempts(rows: readonly DueDelivery[], timestamp: number): Promise<void> {
    const signable = rows.filter((r) => r.secret !== null);
    let signatures: string[];
    try {
      signatures = await this.#deps.sign(signable.map((r) => ({ secret: r.secret ?? '', timestamp, body: r.body })));
    } catch (err) {
      this.#report({ kind: 'error', message: `signing failed; deliveries go back to the queue: ${(err as Error).message}` });
      // No refill: the next poll retries, so a broken pool does not spin.
      this.#giveBack(rows);
      return;
    }
    if (this.#closed) {
      this.#giveBack(rows);
      return;
    }
    let i = 0;
    const touched = new Set<string>();
    for (const row of rows) {
      if (row.secret === null) {
        this.#settle(row, SECRET_UNREADABLE);
        this.#unclaim(row, true);
        continue;
      }
      const attempt: WebhookAttempt = { url: row.url, deliveryId: row.id, timestamp, signature: signatures[i++] ?? '', body: row.body };
      const queue = this.#ready.get(row.webhookId) ?? [];
      queue.push({ row, attempt });
      this.#ready.set(row.webhookId, queue);
      touched.add(row.webhookId);
    }
    for (const id of touched) this.#pump(id);
  }

  /** Takes the claims of rows the store marked `sending`, then signs them (off the loop) and queues them to send. */
  #claim(rows: readonly DueDelivery[], now: number): void {
    if (rows.length === 0) return;
    this.#claimed += rows.length;
    for (const r of rows) bump(this.#claimedBy, r.webhookId, 1);
    void this.#startAttempts(rows, Math.floor(now / 1000));
  }

  /** Up to `free` rows without exceeding any endpoint's claim cap. */
  #pick(rows: readonly DueDelivery[], free: number): DueDelivery[] {
    const picked: DueDelivery[] = [];
    const counts = new Map(this.#claimedBy);
    for (const row of rows) {
      if (picked.length >= free) break;
      const n = counts.get(row.webhookId) ?? 0;
      if (n >= this.#claimCap) continue;
      counts.set(row.webhookId, n + 1);
      picked.push(row);
    }
    return picked;
  }

  readonly #tick = (): void => {
    this.#tickQueued = false;
    if (this.#claiming) {
      this.#tickAgain = true;
      return;
    }
    const free = this.#deps.maxInFlight * 2 - this.#claimed;
    if (this.#closed || free <= 0) return;
    try {
      const now = this.#deps.now();
      const limit = Math.min(free * 2, 1000);
      const skip = [...this.#claimedBy].filter(([, n]) => n >= this.#claimCap).map(([id]) => id);
      this.#claimWith(
        this.#deps.store.claimDue(now, limit, skip, (candidates) => this.#pick(candidates, free)),
        ({ claimed: rows, seen }) => {
          this.#claim(rows, now);
          // Everything seen was taken and there may be more: look again (capacity permitting).
          if (rows.length > 0 && rows.length === seen && seen === limit) this.wake();
        },
        'dispatch tick failed',
      );
    } catch (err) {
      this.#report({ kind: 'error', message: `dispatch tick failed: ${(err as Error).message}` });
    }
  };

  #queueRefill(webhookId: string): void {
    this.#refills.add(webhookId);
    if (this.#refillQueued) return;
    this.#refillQueued = true;
    setImmediate(this.#runRefills);
  }

  readonly #runRefills = (): void => {
    this.#refillQueued = false;
    // Resumed when the claim in flight settles.
    if (this.#claiming) return;
    for (const id of [...this.#refills]) {
      if (this.#claiming) break;
      this.#refills.delete(id);
      const free = Math.min(this.#deps.maxInFlight * 2 - this.#claimed, this.#claimCap - (this.#claimedBy.get(id) ?? 0));
      if (this.#closed || free <= 0) continue;
      try {
        const now = this.#deps.now();
        this.#claimWith(this.#deps.store.claimDueFor(id, now, free), (rows) => this.#claim(rows, now), 'dispatch refill failed');
      } catch (err) {
        this.#report({ kind: 'error', message: `dispatch refill failed: ${(err as Error).message}` });
      }
    }
  };
}
