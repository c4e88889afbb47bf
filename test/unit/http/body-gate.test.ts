import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BodyGate, discardBoundFor } from '../../../src/http/body-gate.js';

describe('BodyGate', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends an answer at once when the body is already in', () => {
    const gate = new BodyGate(true, 100);
    gate.received(10, true);
    const release = vi.fn();
    gate.hold(release);
    expect(release).toHaveBeenCalledWith(false);
  });

  it('holds an early answer until the last byte, then sends it keep-alive', () => {
    const gate = new BodyGate(true, 100);
    const release = vi.fn();
    gate.hold(release);
    gate.received(10, false);
    expect(release).not.toHaveBeenCalled();
    expect(gate.answered).toBe(true);
    gate.received(10, true);
    expect(release).toHaveBeenCalledExactlyOnceWith(false);
  });

  it('gives up on the connection once the client has sent more than the discard bound', () => {
    const gate = new BodyGate(true, 100);
    const release = vi.fn();
    gate.hold(release);
    gate.received(60, false);
    gate.received(60, false);
    expect(release).toHaveBeenCalledExactlyOnceWith(true);
    gate.received(10, true);
    expect(release).toHaveBeenCalledTimes(1);
  });

  it('closes after 5 s without a byte, and after 30 s in all however the bytes trickle', () => {
    const quiet = new BodyGate(true, 1e9);
    const r1 = vi.fn();
    quiet.hold(r1);
    vi.advanceTimersByTime(4999);
    expect(r1).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(r1).toHaveBeenCalledWith(true);

    const trickle = new BodyGate(true, 1e9);
    const r2 = vi.fn();
    trickle.hold(r2);
    for (let t = 0; t < 29; t++) {
      vi.advanceTimersByTime(1000);
      trickle.received(1, false);
    }
    expect(r2).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1000);
    expect(r2).toHaveBeenCalledWith(true);
  });

  it('sends nothing once the client is gone', () => {
    const gate = new BodyGate(true, 100);
    const release = vi.fn();
    gate.hold(release);
    gate.cancel();
    gate.received(10, true);
    vi.advanceTimersByTime(60_000);
    expect(release).not.toHaveBeenCalled();
  });

  it('bounds the discard at 16x the cap, within 1 MiB and 128 MiB', () => {
    expect(discardBoundFor(16 * 1024)).toBe(1024 * 1024);
    expect(discardBoundFor(1024 * 1024)).toBe(16 * 1024 * 1024);
    expect(discardBoundFor(64 * 1024 * 1024)).toBe(128 * 1024 * 1024);
  });
});
