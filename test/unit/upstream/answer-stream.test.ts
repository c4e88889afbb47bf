/**
 * The streamed answer's handler (src/upstream/answer-stream.ts), driven the way undici drives a dispatch
 * handler: what arrives before the reader attaches is kept in order, backpressure reaches undici's
 * controller, a failure reaches the call or the reader, and the pool's release runs once the answer is over.
 */
import { describe, expect, it } from 'vitest';
import type { Dispatcher } from 'undici';
import { MAX_ERROR_BYTES } from '../../../src/upstream/answer-cap.js';
import { AnswerStream, type AnswerReader } from '../../../src/upstream/answer-stream.js';
import { UpstreamAbort } from '../../../src/upstream/upstream-client.js';

class FakeController {
  paused = false;
  aborted: Error | null = null;
  pause(): void {
    this.paused = true;
  }
  resume(): void {
    this.paused = false;
  }
  abort(reason: Error): void {
    this.aborted = reason;
  }
}

function started(signal = new UpstreamAbort()) {
  const controller = new FakeController();
  const ctl = controller as unknown as Dispatcher.DispatchController;
  let resolved: AnswerStream | null = null;
  let rejected: Error | null = null;
  const answer = new AnswerStream(
    signal,
    (a) => (resolved = a),
    (e) => (rejected = e),
  );
  answer.onRequestStart(ctl);
  return { answer, controller, ctl, signal, resolved: () => resolved, rejected: () => rejected };
}

function recorder(): AnswerReader & { events: string[] } {
  const events: string[] = [];
  return {
    events,
    onAnswerData: (chunk) => events.push(`data:${chunk.toString()}`),
    onAnswerEnd: () => events.push('end'),
    onAnswerError: (err) => events.push(`error:${err.message}`),
  };
}

describe('AnswerStream', () => {
  it('resolves at the headers and hands over what came before the reader, in order, then the end', () => {
    const s = started();
    s.answer.onResponseStart(s.ctl, 200, { 'content-type': 'text/event-stream' });
    expect(s.resolved()).toBe(s.answer);
    expect(s.answer.statusCode).toBe(200);
    s.answer.onResponseData(s.ctl, Buffer.from('a'));
    s.answer.onResponseData(s.ctl, Buffer.from('b'));
    s.answer.onResponseEnd();
    const reader = recorder();
    s.answer.read(reader);
    expect(reader.events).toEqual(['data:a', 'data:b', 'end']);
  });

  it('hands each read straight to an attached reader', () => {
    const s = started();
    s.answer.onResponseStart(s.ctl, 200, {});
    const reader = recorder();
    s.answer.read(reader);
    s.answer.onResponseData(s.ctl, Buffer.from('x'));
    expect(reader.events).toEqual(['data:x']);
    s.answer.onResponseData(s.ctl, Buffer.from('y'));
    s.answer.onResponseEnd();
    expect(reader.events).toEqual(['data:x', 'data:y', 'end']);
  });

  it("pauses undici's parser past 64 KiB queued without a reader, and resumes it when one attaches", () => {
    const s = started();
    s.answer.onResponseStart(s.ctl, 200, {});
    s.answer.onResponseData(s.ctl, Buffer.alloc(64 * 1024));
    expect(s.controller.paused).toBe(false);
    s.answer.onResponseData(s.ctl, Buffer.alloc(1));
    expect(s.controller.paused).toBe(true);
    s.answer.read(recorder());
    expect(s.controller.paused).toBe(false);
  });

  it("passes the reader's backpressure to undici's controller", () => {
    const s = started();
    s.answer.onResponseStart(s.ctl, 200, {});
    s.answer.read(recorder());
    s.answer.pause();
    expect(s.controller.paused).toBe(true);
    s.answer.resume();
    expect(s.controller.paused).toBe(false);
  });

  it('rejects the call on a failure before the headers', () => {
    const s = started();
    s.answer.onResponseError(s.ctl, new Error('connect ECONNREFUSED'));
    expect(s.rejected()?.message).toBe('connect ECONNREFUSED');
    expect(s.resolved()).toBeNull();
  });

  it('reports a failure after the headers to the reader, attached before or after it', () => {
    const early = started();
    early.answer.onResponseStart(early.ctl, 200, {});
    const attached = recorder();
    early.answer.read(attached);
    early.answer.onResponseData(early.ctl, Buffer.from('a'));
    early.answer.onResponseError(early.ctl, new Error('other side closed'));
    expect(attached.events).toEqual(['data:a', 'error:other side closed']);

    const late = started();
    late.answer.onResponseStart(late.ctl, 200, {});
    late.answer.onResponseData(late.ctl, Buffer.from('a'));
    late.answer.onResponseError(late.ctl, new Error('other side closed'));
    const after = recorder();
    late.answer.read(after);
    expect(after.events).toEqual(['data:a', 'error:other side closed']);
    expect(late.rejected()).toBeNull();
  });

  it('runs whenDone once the answer is over, or at once when it is', () => {
    const s = started();
    s.answer.onResponseStart(s.ctl, 200, {});
    const ran: string[] = [];
    s.answer.whenDone(() => ran.push('release'));
    s.answer.whenDone(() => ran.push('span'));
    expect(ran).toEqual([]);
    s.answer.onResponseEnd();
    expect(ran).toEqual(['release', 'span']);
    s.answer.whenDone(() => ran.push('late'));
    expect(ran).toEqual(['release', 'span', 'late']);

    const failed = started();
    failed.answer.onResponseStart(failed.ctl, 200, {});
    let released = 0;
    failed.answer.whenDone(() => (released += 1));
    failed.answer.onResponseError(failed.ctl, new Error('aborted'));
    expect(released).toBe(1);
  });

  it("aborts undici's request when the turn's trigger fires, and stops listening once the answer is over", () => {
    const s = started();
    s.answer.onResponseStart(s.ctl, 200, {});
    s.signal.abort();
    expect(s.controller.aborted).not.toBeNull();

    const signal = new UpstreamAbort();
    const done = started(signal);
    done.answer.onResponseStart(done.ctl, 200, {});
    done.answer.onResponseEnd();
    signal.abort();
    expect(done.controller.aborted).toBeNull();
  });

  it('aborts at once when the trigger fired before the request started', () => {
    const signal = new UpstreamAbort();
    signal.abort();
    const s = started(signal);
    expect(s.controller.aborted).not.toBeNull();
  });

  it("reads an error answer's text whole, or its first MAX_ERROR_BYTES and then aborts", async () => {
    const s = started();
    s.answer.onResponseStart(s.ctl, 429, {});
    s.answer.onResponseData(s.ctl, Buffer.from('{"error":'));
    const text = s.answer.errorText();
    s.answer.onResponseData(s.ctl, Buffer.from('"slow down"}'));
    s.answer.onResponseEnd();
    await expect(text).resolves.toBe('{"error":"slow down"}');

    const big = started();
    big.answer.onResponseStart(big.ctl, 500, {});
    const capped = big.answer.errorText();
    big.answer.onResponseData(big.ctl, Buffer.alloc(MAX_ERROR_BYTES + 10, 'x'));
    expect((await capped).length).toBe(MAX_ERROR_BYTES);
    expect(big.controller.aborted).not.toBeNull();
  });
});
