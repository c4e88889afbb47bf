/**
 * An answer waits for the answer barrier (http/reply.ts AnswerBarrier: the usage journal's rows of this
 * event-loop turn, written together at setImmediate, store/usage-journal.ts): a buffered answer and a
 * stream's end are held while the barrier holds and go out once it lets them, and an answer whose client
 * left in between is dropped without touching uWS's response. The barrier here is a hand-released one, so
 * each step is taken by the test, not by time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnswerBarrier } from '../../../src/http/reply.js';
import { createHttpServer, type HttpServer, type RouteContext, type RouteDef } from '../../../src/http/server.js';
import { loadUws } from '../../../src/http/uws.js';
import { openRaw, requestHead } from '../../helpers/raw-http.js';

class HandBarrier implements AnswerBarrier {
  holding = false;
  waiting: (() => void)[] = [];
  after(send: () => void): void {
    if (this.holding) this.waiting.push(send);
    else send();
  }
  release(): void {
    this.holding = false;
    const go = this.waiting;
    this.waiting = [];
    for (const send of go) send();
  }
}

const barrier = new HandBarrier();
const unexpected: unknown[] = [];
let server: HttpServer;
let base = '';
/** Resolved by a route once its handler has answered (or seen its client go). */
let signal: () => void = () => undefined;
const next = (): Promise<void> => new Promise((resolve) => (signal = resolve));

const route = (pattern: string, handle: (ctx: RouteContext) => void): RouteDef => ({ method: 'GET', pattern, family: 'test', auth: { kind: 'public' }, handle });

beforeAll(async () => {
  server = createHttpServer({
    uws: loadUws().uws,
    answerBarrier: barrier,
    routes: [
      route('/json', ({ reply }) => {
        barrier.holding = true;
        reply.json(200, { ok: true });
        signal();
      }),
      route('/stream', ({ reply }) => {
        reply.beginStream(200, 'text/event-stream');
        reply.write('data: 1\n\n');
        barrier.holding = true;
        reply.endStream('data: [DONE]\n\n');
        signal();
      }),
      route('/leaves', ({ req, reply }) => {
        barrier.holding = true;
        reply.json(200, { ok: true });
        req.onAbort(() => signal());
        signal();
      }),
      route('/plain', ({ reply }) => reply.json(200, { plain: true })),
    ],
    maxBodyBytes: 1024,
    production: false,
    trustProxy: false,
    onComplete: () => undefined,
    onUnexpectedError: (err) => unexpected.push(err),
  });
  base = `http://127.0.0.1:${await server.listen('127.0.0.1', 0)}`;
});

afterAll(async () => {
  await server.drain(100);
});

describe('answers wait for the answer barrier', () => {
  it('holds a buffered answer until the barrier lets it go', async () => {
    const answered = next();
    const response = fetch(`${base}/json`);
    await answered;
    expect(barrier.waiting).toHaveLength(1);
    barrier.release();
    const res = await response;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });

  it("holds a stream's end (its first bytes went out) until the barrier lets it go", async () => {
    const answered = next();
    const response = fetch(`${base}/stream`);
    await answered;
    expect(barrier.waiting).toHaveLength(1);
    barrier.release();
    const res = await response;
    expect(await res.text()).toBe('data: 1\n\ndata: [DONE]\n\n');
  });

  it('sends at once when the barrier holds nothing', async () => {
    const res = await fetch(`${base}/plain`);
    expect(await res.json()).toEqual({ plain: true });
    expect(barrier.waiting).toHaveLength(0);
  });

  it('drops a held answer whose client left, and goes on serving', async () => {
    const answered = next();
    const raw = await openRaw(base);
    await raw.write(requestHead('GET', '/leaves', {}));
    await answered;
    expect(barrier.waiting).toHaveLength(1);
    const gone = next();
    raw.socket.destroy();
    await gone;
    barrier.release();
    expect(unexpected).toEqual([]);
    const res = await fetch(`${base}/plain`);
    expect(res.status).toBe(200);
  });
});
