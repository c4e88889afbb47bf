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

/** A store's answer: at once (SQLite) or after a round trip (PostgreSQL). */
export type StoreAnswer<T> = T | Promise<T>;

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

/** `then` at once for a synchronous answer (which may throw to the caller), after the round trip otherwise. */
function onAnswer<T>(answer: StoreAnswer<T>, then: (value: T) => void, failed: (err: unknown) => void): Promise<void> | null {
  if (answer instanceof Promise) return answer.then(then).catch(failed);
  then(answer);
  return null;
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

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

const FLUSH_MAX = 128;

interface Ready {
  readonly row: DueDelivery;
  readonly attempt: WebhookAttempt;
}

export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const shareCap = deps.perWebhookInFlight;
  const claimCap = shareCap * 2;
  const claimedBy = new Map<string, number>();
  const sendingBy = new Map<string, number>();
  const ready = new Map<string, Ready[]>();
  let claimed = 0;
  let sending = 0;
  let results: DeliveryResult[] = [];
  let flushTimer: NodeJS.Timeout | null = null;
  let pollTimer: NodeJS.Timeout | null = null;
  let tickQueued = false;
  const refills = new Set<string>();
  let refillQueued = false;
  let closed = false;
  let stopped = false;
  let idle: (() => void) | null = null;
  /** An asynchronous claim in flight, and whether a tick was asked for meanwhile. */
  let claiming: Promise<void> | null = null;
  let tickAgain = false;
  /** The last asynchronous outcome write, awaited by close. */
  let recording: Promise<void> | null = null;
  const report = (event: DispatcherEvent): void => deps.onEvent?.(event);
  const bump = (m: Map<string, number>, id: string, by: number): number => {
    const n = (m.get(id) ?? 0) + by;
    if (n <= 0) m.delete(id);
    else m.set(id, n);
    return n;
  };

  function flush(): void {
    if (flushTimer) clearTimeout(flushTimer);
    flushTimer = null;
    if (results.length === 0) return;
    const batch = results;
    results = [];
    const failed = (err: unknown): void => {
      // Rows stay `sending` in the store; keep the outcomes and try again shortly.
      results = [...batch, ...results];
      report({ kind: 'error', message: `recording delivery outcomes failed: ${messageOf(err)}` });
      if (flushTimer) clearTimeout(flushTimer);
      flushTimer = stopped ? null : setTimeout(flush, 1000);
    };
    try {
      const written = onAnswer(deps.store.recordResults(batch, deps.now()), () => undefined, failed);
      if (written) recording = Promise.all([recording, written]).then(() => undefined);
    } catch (err) {
      failed(err);
    }
  }

  /**
   * Asks the store for rows to claim and hands them to `then`. A synchronous store's error reaches the
   * caller's catch; an asynchronous claim blocks the next one until it settles.
   */
  function claimWith<T>(answer: StoreAnswer<T>, then: (value: T) => void, failure: string): void {
    const pending = onAnswer(answer, then, (err) => report({ kind: 'error', message: `${failure}: ${messageOf(err)}` }));
    if (!pending) return;
    claiming = pending.finally(() => {
      claiming = null;
      if (tickAgain) {
        tickAgain = false;
        wake();
      }
      if (refills.size > 0 && !refillQueued) {
        refillQueued = true;
        setImmediate(runRefills);
      }
    });
  }

  function queueResult(result: DeliveryResult): void {
    // After close the store may be gone: the row stays `sending` and is attempted again at the next start.
    if (stopped) return;
    results.push(result);
    if (results.length >= FLUSH_MAX) flush();
    else flushTimer ??= setTimeout(flush, deps.flushMs ?? 10);
  }

  /** A claimed row is done (settled or given back): frees its claim; refills its endpoint when half free. */
  function unclaim(row: DueDelivery, refill: boolean): void {
    claimed -= 1;
    const n = bump(claimedBy, row.webhookId, -1);
    if (claimed === 0) idle?.();
    if (refill && !closed && claimCap - n >= shareCap) queueRefill(row.webhookId);
  }

  /** Claimed rows that will not be attempted now go back to `pending`, their attempt not counted. */
  function giveBack(rows: readonly DueDelivery[]): void {
    for (const r of rows) {
      queueResult({ seq: r.seq, kind: 'released' });
      unclaim(r, false);
    }
  }

  function settle(row: DueDelivery, outcome: AttemptOutcome): void {
    const result = resultOf(row, outcome, deps.now(), deps.retryScheduleMs);
    report({
      kind: 'attempt',
      deliveryId: row.id,
      webhookId: row.webhookId,
      attempt: row.attemptCount + 1,
      ok: outcome.ok,
      httpStatus: outcome.httpStatus,
      error: outcome.errorMessage,
      state: 'state' in result ? result.state : 'released',
    });
    if (result.state === 'failed') report({ kind: 'failed_permanently', deliveryId: row.id, webhookId: row.webhookId, error: outcome.errorMessage });
    queueResult(result);
  }

  /** Starts the endpoint's signed attempts while it and the whole dispatcher have open slots. */
  function pump(webhookId: string): void {
    const queue = ready.get(webhookId);
    while (!closed && queue && queue.length > 0 && sending < deps.maxInFlight && (sendingBy.get(webhookId) ?? 0) < shareCap) {
      const { row, attempt } = queue.shift() as Ready;
      sending += 1;
      bump(sendingBy, webhookId, 1);
      void deps
        .send(attempt)
        .catch((err: unknown): AttemptOutcome => ({ ok: false, httpStatus: null, responseBody: null, errorMessage: String(err) }))
        .then((outcome) => {
          sending -= 1;
          bump(sendingBy, webhookId, -1);
          settle(row, outcome);
          unclaim(row, true);
          pump(webhookId);
          // A slot freed overall: endpoints held back by the global cap go next.
          for (const [id, q] of ready) if (q.length > 0 && id !== webhookId) pump(id);
        });
    }
    if (queue && queue.length === 0) ready.delete(webhookId);
  }

  async function startAttempts(rows: readonly DueDelivery[], timestamp: number): Promise<void> {
    const signable = rows.filter((r) => r.secret !== null);
    let signatures: string[];
    try {
      signatures = await deps.sign(signable.map((r) => ({ secret: r.secret ?? '', timestamp, body: r.body })));
    } catch (err) {
      report({ kind: 'error', message: `signing failed; deliveries go back to the queue: ${(err as Error).message}` });
      // No refill: the next poll retries, so a broken pool does not spin.
      giveBack(rows);
      return;
    }
    if (closed) {
      giveBack(rows);
      return;
    }
    let i = 0;
    const touched = new Set<string>();
    for (const row of rows) {
      if (row.secret === null) {
        settle(row, SECRET_UNREADABLE);
        unclaim(row, true);
        continue;
      }
      const attempt: WebhookAttempt = { url: row.url, deliveryId: row.id, timestamp, signature: signatures[i++] ?? '', body: row.body };
      const queue = ready.get(row.webhookId) ?? [];
      queue.push({ row, attempt });
      ready.set(row.webhookId, queue);
      touched.add(row.webhookId);
    }
    for (const id of touched) pump(id);
  }

  /** Takes the claims of rows the store marked `sending`, then signs them (off the loop) and queues them to send. */
  function claim(rows: readonly DueDelivery[], now: number): void {
    if (rows.length === 0) return;
    claimed += rows.length;
    for (const r of rows) bump(claimedBy, r.webhookId, 1);
    void startAttempts(rows, Math.floor(now / 1000));
  }

  /** Up to `free` rows without exceeding any endpoint's claim cap. */
  function pick(rows: readonly DueDelivery[], free: number): DueDelivery[] {
    const picked: DueDelivery[] = [];
    const counts = new Map(claimedBy);
    for (const row of rows) {
      if (picked.length >= free) break;
      const n = counts.get(row.webhookId) ?? 0;
      if (n >= claimCap) continue;
      counts.set(row.webhookId, n + 1);
      picked.push(row);
    }
    return picked;
  }

  function tick(): void {
    tickQueued = false;
    if (claiming) {
      tickAgain = true;
      return;
    }
    const free = deps.maxInFlight * 2 - claimed;
    if (closed || free <= 0) return;
    try {
      const now = deps.now();
      const limit = Math.min(free * 2, 1000);
      const skip = [...claimedBy].filter(([, n]) => n >= claimCap).map(([id]) => id);
      claimWith(
        deps.store.claimDue(now, limit, skip, (candidates) => pick(candidates, free)),
        ({ claimed: rows, seen }) => {
          claim(rows, now);
          // Everything seen was taken and there may be more: look again (capacity permitting).
          if (rows.length > 0 && rows.length === seen && seen === limit) wake();
        },
        'dispatch tick failed',
      );
    } catch (err) {
      report({ kind: 'error', message: `dispatch tick failed: ${(err as Error).message}` });
    }
  }

  function queueRefill(webhookId: string): void {
    refills.add(webhookId);
    if (refillQueued) return;
    refillQueued = true;
    setImmediate(runRefills);
  }

  function runRefills(): void {
    refillQueued = false;
    // Resumed when the claim in flight settles.
    if (claiming) return;
    for (const id of [...refills]) {
      if (claiming) break;
      refills.delete(id);
      const free = Math.min(deps.maxInFlight * 2 - claimed, claimCap - (claimedBy.get(id) ?? 0));
      if (closed || free <= 0) continue;
      try {
        const now = deps.now();
        claimWith(deps.store.claimDueFor(id, now, free), (rows) => claim(rows, now), 'dispatch refill failed');
      } catch (err) {
        report({ kind: 'error', message: `dispatch refill failed: ${(err as Error).message}` });
      }
    }
  }

  function wake(): void {
    if (tickQueued || closed) return;
    tickQueued = true;
    setImmediate(tick);
  }

  return {
    start() {
      onAnswer(
        deps.store.releaseAbandoned(),
        (resumed) => {
          if (resumed > 0) report({ kind: 'resumed', count: resumed });
        },
        (err) => report({ kind: 'error', message: `resuming deliveries left in flight failed: ${messageOf(err)}` }),
      );
      pollTimer = setInterval(wake, deps.pollMs);
      pollTimer.unref();
      wake();
    },
    wake,
    keepClaims() {
      if (stopped) return;
      const failed = (err: unknown): void => report({ kind: 'error', message: `keeping delivery claims failed: ${messageOf(err)}` });
      const released = (count: number): void => {
        if (count > 0) {
          report({ kind: 'resumed', count });
          wake();
        }
      };
      try {
        onAnswer(deps.store.renewClaims(), () => void onAnswer(deps.store.releaseAbandoned(), released, failed), failed);
      } catch (err) {
        failed(err);
      }
    },
    get inFlight() {
      return claimed;
    },
    async close(waitMs) {
      closed = true;
      if (pollTimer) clearInterval(pollTimer);
      await claiming;
      // Signed but never sent: back to pending now, rather than at the next start.
      for (const queue of ready.values()) giveBack(queue.splice(0).map((r) => r.row));
      if (claimed > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, waitMs);
          idle = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      flush();
      stopped = true;
      if (flushTimer) clearTimeout(flushTimer);
      await recording;
    },
  };
}
