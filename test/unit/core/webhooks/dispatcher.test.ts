import { afterEach, describe, expect, it } from 'vitest';
import type { AttemptOutcome, DeliveryResult, DueDelivery, WebhookAttempt } from '../../../../src/core/webhooks/delivery.js';
import { createDispatcher, type Dispatcher, type DispatcherEvent, type DispatchStore } from '../../../../src/core/webhooks/dispatcher.js';
import { DEFAULT_RETRY_SCHEDULE_MS } from '../../../../src/core/webhooks/retry-schedule.js';

interface Row {
  seq: number;
  webhookId: string;
  state: 'pending' | 'sending' | 'delivered' | 'failed';
  attemptCount: number;
  nextAttemptAt: number;
  secret: string | null;
}

/** The store contract in memory: what the SQL does, minus the SQL (one instance: no leases to expire). */
function memoryStore(rows: Row[]): DispatchStore & { rows: Row[]; claims: number[][]; selectDueFor(webhookId: string, now: number, limit: number): DueDelivery[] } {
  const claims: number[][] = [];
  const toDue = (r: Row): DueDelivery => ({
    seq: r.seq,
    id: `del_${r.seq}`,
    webhookId: r.webhookId,
    url: `https://receiver.example/${r.webhookId}`,
    secret: r.secret,
    body: `{"n":${r.seq}}`,
    attemptCount: r.attemptCount,
  });
  const selectDue = (now: number, limit: number, skip: readonly string[]): DueDelivery[] =>
    rows
      .filter((r) => r.state === 'pending' && r.nextAttemptAt <= now && !skip.includes(r.webhookId))
      .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || a.seq - b.seq)
      .slice(0, limit)
      .map(toDue);
  const markSending = (picked: readonly DueDelivery[]): DueDelivery[] => {
    if (picked.length > 0) claims.push(picked.map((d) => d.seq));
    for (const d of picked) {
      const r = rows.find((x) => x.seq === d.seq);
      if (r?.state === 'pending') r.state = 'sending';
    }
    return [...picked];
  };
  return {
    rows,
    claims,
    releaseAbandoned() {
      const stuck = rows.filter((r) => r.state === 'sending');
      stuck.forEach((r) => (r.state = 'pending'));
      return stuck.length;
    },
    renewClaims: () => rows.filter((r) => r.state === 'sending').length,
    claimDue(now, limit, skip, pick) {
      const candidates = selectDue(now, limit, skip);
      return { claimed: markSending(pick(candidates)), seen: candidates.length };
    },
    selectDueFor(webhookId, now, limit) {
      return selectDue(now, Number.MAX_SAFE_INTEGER, [])
        .filter((r) => r.webhookId === webhookId)
        .slice(0, limit);
    },
    claimDueFor(webhookId, now, limit) {
      return markSending(this.selectDueFor(webhookId, now, limit));
    },
    recordResults(results: readonly DeliveryResult[]) {
      for (const res of results) {
        const r = rows.find((x) => x.seq === res.seq);
        if (!r || r.state !== 'sending') continue;
        if (res.kind === 'released') {
          r.state = 'pending';
          continue;
        }
        r.state = res.state;
        r.attemptCount = res.attemptCount;
        if (res.nextAttemptAt !== null) r.nextAttemptAt = res.nextAttemptAt;
      }
    },
  };
}

const pending = (seq: number, webhookId = 'w1', extra: Partial<Row> = {}): Row => ({
  seq,
  webhookId,
  state: 'pending',
  attemptCount: 0,
  nextAttemptAt: 0,
  secret: 'whsec_test',
  ...extra,
});

const ok: AttemptOutcome = { ok: true, httpStatus: 200, responseBody: 'ok', errorMessage: null };
const refused: AttemptOutcome = { ok: false, httpStatus: 500, responseBody: 'no', errorMessage: 'HTTP 500' };

async function until(check: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 2));
  }
}

let running: Dispatcher | null = null;
afterEach(async () => {
  await running?.close(100);
  running = null;
});

function start(store: DispatchStore, opts: { now?: () => number; send?: (a: WebhookAttempt) => Promise<AttemptOutcome>; maxInFlight?: number; perWebhook?: number; sign?: (n: number) => Promise<string[]> } = {}) {
  const signCalls: number[] = [];
  const sent: WebhookAttempt[] = [];
  const events: DispatcherEvent[] = [];
  running = createDispatcher({
    onEvent: (e) => events.push(e),
    store,
    sign: (items) => {
      signCalls.push(items.length);
      return opts.sign ? opts.sign(items.length) : Promise.resolve(items.map((i) => `sha256=${i.body.length}`));
    },
    send: (a) => {
      sent.push(a);
      return opts.send ? opts.send(a) : Promise.resolve(ok);
    },
    now: opts.now ?? (() => 1_000_000),
    retryScheduleMs: DEFAULT_RETRY_SCHEDULE_MS,
    maxInFlight: opts.maxInFlight ?? 8,
    perWebhookInFlight: opts.perWebhook ?? 4,
    pollMs: 5,
    flushMs: 1,
  });
  running.start();
  return { signCalls, sent, events, dispatcher: running };
}

describe('createDispatcher', () => {
  it('reports every attempt, with its number, status and what the delivery is now (for the operator\'s log)', async () => {
    const store = memoryStore([pending(1)]);
    let calls = 0;
    let clock = 1_000_000;
    const { events } = start(store, { send: () => Promise.resolve(++calls === 1 ? refused : ok), now: () => clock });
    await until(() => store.rows[0]?.attemptCount === 1);
    clock += 24 * 3600 * 1000;
    await until(() => store.rows[0]?.state === 'delivered');
    const attempts = events.filter((e) => e.kind === 'attempt');
    expect(attempts).toEqual([
      { kind: 'attempt', deliveryId: 'del_1', webhookId: 'w1', attempt: 1, ok: false, httpStatus: 500, error: 'HTTP 500', state: 'pending' },
      { kind: 'attempt', deliveryId: 'del_1', webhookId: 'w1', attempt: 2, ok: true, httpStatus: 200, error: null, state: 'delivered' },
    ]);
  });

  it('delivers every due row once and records it delivered with one attempt', async () => {
    const store = memoryStore([pending(1), pending(2, 'w2'), pending(3, 'w3')]);
    const { sent } = start(store);
    await until(() => store.rows.every((r) => r.state === 'delivered'));
    expect(sent.map((a) => a.deliveryId).sort()).toEqual(['del_1', 'del_2', 'del_3']);
    expect(store.rows.map((r) => r.attemptCount)).toEqual([1, 1, 1]);
  });

  it('signs a whole claimed batch in one pool task', async () => {
    const store = memoryStore(Array.from({ length: 6 }, (_, i) => pending(i + 1, `w${i}`)));
    const { signCalls } = start(store);
    await until(() => store.rows.every((r) => r.state === 'delivered'));
    expect(signCalls).toEqual([6]);
  });

  it('leaves rows that are not yet due alone', async () => {
    // Row 2, due now, is claimed oldest due first: once it is delivered, row 1 would have gone before it.
    const store = memoryStore([pending(1, 'w1', { nextAttemptAt: 2_000_000 }), pending(2, 'w2')]);
    const { sent } = start(store);
    await until(() => store.rows[1]?.state === 'delivered');
    expect(sent).toHaveLength(1);
    expect(store.rows[0]?.state).toBe('pending');
  });

  it('schedules the next attempt one minute after a first failure, then five minutes after a second', async () => {
    let now = 1_000_000;
    const store = memoryStore([pending(1)]);
    start(store, { now: () => now, send: () => Promise.resolve(refused) });
    await until(() => store.rows[0]?.attemptCount === 1 && store.rows[0].state === 'pending');
    expect(store.rows[0]?.nextAttemptAt).toBe(1_000_000 + 60_000);
    now += 60_000;
    await until(() => store.rows[0]?.attemptCount === 2 && store.rows[0].state === 'pending');
    expect(store.rows[0]?.nextAttemptAt).toBe(1_060_000 + 300_000);
  });

  it('marks a delivery failed after its sixth failed attempt and never tries again', async () => {
    let now = 1_000_000;
    const store = memoryStore([pending(1)]);
    const { sent } = start(store, { now: () => now, send: () => Promise.resolve(refused) });
    for (let attempt = 1; attempt <= 6; attempt += 1) {
      await until(() => store.rows[0]?.attemptCount === attempt && store.rows[0].state !== 'sending');
      now += 24 * 3_600_000;
    }
    expect(store.rows[0]?.state).toBe('failed');
    await new Promise((r) => setTimeout(r, 30));
    expect(sent).toHaveLength(6);
  });

  it('keeps at most perWebhookInFlight attempts open per endpoint and maxInFlight overall', async () => {
    const store = memoryStore([...Array.from({ length: 10 }, (_, i) => pending(i + 1, 'slow')), pending(11, 'other')]);
    const held: (() => void)[] = [];
    let open = 0;
    let maxOpen = 0;
    const { sent } = start(store, {
      maxInFlight: 5,
      perWebhook: 3,
      send: () =>
        new Promise((resolve) => {
          open += 1;
          maxOpen = Math.max(maxOpen, open);
          held.push(() => {
            open -= 1;
            resolve(ok);
          });
        }),
    });
    await until(() => sent.length === 4);
    expect(sent.filter((a) => a.url.endsWith('/slow'))).toHaveLength(3);
    expect(sent.some((a) => a.url.endsWith('/other'))).toBe(true);
    while (store.rows.some((r) => r.state !== 'delivered')) {
      held.splice(0).forEach((release) => release());
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(maxOpen).toBeLessThanOrEqual(5);
  });

  it('claims and signs up to one more share ahead of an endpoint\'s open requests, and gives those back at close', async () => {
    const store = memoryStore(Array.from({ length: 10 }, (_, i) => pending(i + 1, 'held')));
    const { sent, dispatcher } = start(store, { perWebhook: 2, send: () => new Promise(() => undefined) });
    await until(() => sent.length === 2);
    await new Promise((r) => setTimeout(r, 20));
    expect(sent).toHaveLength(2);
    expect(store.rows.filter((r) => r.state === 'sending')).toHaveLength(4);
    await dispatcher.close(10);
    running = null;
    // The two requests still open stay `sending` (resent at the next start); the two signed ahead are pending again.
    expect(store.rows.filter((r) => r.state === 'sending')).toHaveLength(2);
    expect(store.rows.filter((r) => r.state === 'pending')).toHaveLength(8);
  });

  it('refills a busy endpoint through its own query as its attempts finish', async () => {
    const store = memoryStore(Array.from({ length: 40 }, (_, i) => pending(i + 1, 'busy')));
    const perEndpoint: string[] = [];
    const select = store.selectDueFor.bind(store);
    store.selectDueFor = (id, now, limit) => {
      perEndpoint.push(id);
      return select(id, now, limit);
    };
    start(store, { maxInFlight: 16, perWebhook: 4 });
    await until(() => store.rows.every((r) => r.state === 'delivered'));
    expect(perEndpoint.length).toBeGreaterThan(0);
    expect(new Set(perEndpoint)).toEqual(new Set(['busy']));
  });

  it('puts rows left sending by a crashed process back to pending at start and delivers them', async () => {
    const store = memoryStore([pending(1, 'w1', { state: 'sending' })]);
    start(store);
    await until(() => store.rows[0]?.state === 'delivered');
    expect(store.rows[0]?.attemptCount).toBe(1);
  });

  it('gives claimed rows back unattempted when signing fails', async () => {
    const store = memoryStore([pending(1)]);
    let fail = true;
    const { sent } = start(store, { sign: (n) => (fail ? Promise.reject(new Error('pool down')) : Promise.resolve(Array.from({ length: n }, () => 'sha256=x'))) });
    await until(() => store.claims.length >= 1);
    await until(() => store.rows[0]?.state === 'pending');
    expect(store.rows[0]?.attemptCount).toBe(0);
    fail = false;
    await until(() => store.rows[0]?.state === 'delivered');
    expect(sent).toHaveLength(1);
  });

  it('counts an unreadable secret as a failed attempt without sending', async () => {
    const store = memoryStore([pending(1, 'w1', { secret: null })]);
    const { sent } = start(store);
    await until(() => store.rows[0]?.attemptCount === 1);
    expect(sent).toHaveLength(0);
    expect(store.rows[0]?.state).toBe('pending');
  });

  it('writes outcomes still in flight at close no more: those rows stay sending for the next start', async () => {
    const store = memoryStore([pending(1)]);
    const { dispatcher } = start(store, { send: () => new Promise(() => undefined) });
    await until(() => store.rows[0]?.state === 'sending');
    await dispatcher.close(10);
    running = null;
    expect(store.rows[0]?.state).toBe('sending');
  });
});
