import { describe, expect, it } from 'vitest';
import { isServerFailureStatus, ServerHealth } from '../../../src/upstream/server-health.js';

const policy = { failureThreshold: 3, cooldownMs: 10_000 };

/** A server taken out at `at` (three failures in a row). */
function downAt(at: number): ServerHealth {
  const h = new ServerHealth(policy);
  h.failed(at, 'ECONNREFUSED 127.0.0.1:9');
  h.failed(at, 'ECONNREFUSED 127.0.0.1:9');
  expect(h.failed(at, 'ECONNREFUSED 127.0.0.1:9')).toBe('taken_out');
  return h;
}

describe('ServerHealth', () => {
  it('stays up below the threshold, and an answer resets the count', () => {
    const h = new ServerHealth(policy);
    expect(h.failed(0, 'a')).toBeNull();
    expect(h.failed(0, 'b')).toBeNull();
    h.succeeded();
    expect(h.failures).toBe(0);
    expect(h.failed(0, 'c')).toBeNull();
    expect(h.failed(0, 'd')).toBeNull();
    expect(h.state).toBe('up');
    expect(h.available).toBe(true);
    expect(h.lastFailure).toBe('d');
  });

  it('takes the server out at the threshold for the cooldown', () => {
    const h = downAt(1000);
    expect(h.state).toBe('down');
    expect(h.available).toBe(false);
    expect(h.retryAt).toBe(11_000);
    expect(h.lastFailure).toBe('ECONNREFUSED 127.0.0.1:9');
  });

  it('asks for one probe once the cooldown is over, not before', () => {
    const h = downAt(0);
    expect(h.probeDue(9_999)).toBe(false);
    expect(h.probeDue(10_000)).toBe(true);
    expect(h.state).toBe('probing');
    expect(h.available).toBe(false);
    // Only one probe per cooldown.
    expect(h.probeDue(20_000)).toBe(false);
  });

  it('comes back when the probe answers, with a clean count', () => {
    const h = downAt(0);
    h.probeDue(10_000);
    expect(h.probeSucceeded()).toBe('back');
    expect(h.state).toBe('up');
    expect(h.failures).toBe(0);
    expect(h.retryAt).toBeNull();
  });

  it('starts a new cooldown when the probe fails', () => {
    const h = downAt(0);
    h.probeDue(10_000);
    expect(h.probeFailed(10_500, 'ECONNREFUSED 127.0.0.1:9')).toBe('still_down');
    expect(h.state).toBe('down');
    expect(h.retryAt).toBe(20_500);
    expect(h.probeDue(20_499)).toBe(false);
    expect(h.probeDue(20_500)).toBe(true);
  });

  it('lets only the probe decide while out: late answers and failures of earlier requests change nothing', () => {
    const h = downAt(0);
    expect(h.succeeded()).toBeNull();
    expect(h.failed(5000, 'HTTP 503 from x')).toBeNull();
    expect(h.state).toBe('down');
    expect(h.retryAt).toBe(10_000);
    h.probeDue(10_000);
    h.succeeded();
    expect(h.state).toBe('probing');
  });

  it('ignores probe results outside a probe', () => {
    const h = new ServerHealth(policy);
    expect(h.probeSucceeded()).toBeNull();
    expect(h.probeFailed(0, 'x')).toBeNull();
    expect(h.state).toBe('up');
  });

  it('counts 502, 503 and 504 against a server and nothing else', () => {
    expect([500, 501, 502, 503, 504, 429, 404, 401].filter(isServerFailureStatus)).toEqual([502, 503, 504]);
  });
});
