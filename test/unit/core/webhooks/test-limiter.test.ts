import { describe, expect, it } from 'vitest';
import type { ThrottlePort } from '../../../../src/core/coordination/throttle-port.js';
import { CounterThrottles } from '../../../../src/core/limits/counter-throttles.js';
import { createTestDeliveryLimiter } from '../../../../src/core/webhooks/test-limiter.js';
import { GatewayError } from '../../../../src/errors.js';

async function refusalOf(attempt: Promise<void>): Promise<GatewayError> {
  const err: unknown = await attempt.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(GatewayError);
  return err as GatewayError;
}

describe('createTestDeliveryLimiter', () => {
  it('admits 10 tests per webhook per hour and refuses the 11th with 429 webhook_test_limit_exceeded', async () => {
    const limiter = createTestDeliveryLimiter(new CounterThrottles());
    for (let i = 0; i < 10; i += 1) await limiter.admit('w1', 1_000_000 + i * 1000);
    const e = await refusalOf(limiter.admit('w1', 1_000_000 + 10_000));
    expect({ status: e.status, code: e.code }).toEqual({ status: 429, code: 'webhook_test_limit_exceeded' });
    // The ten tests share one minute's bucket, which leaves the window an hour after its latest test
    // (1,009,000): 3599 s from now.
    expect(e.headers).toEqual({ 'Retry-After': '3599' });
    expect(e.extra).toMatchObject({ retry_after: 3599, retry_strategy: { type: 'fixed', initial_delay_ms: 3_599_000 } });
  });

  it('counts each webhook separately', async () => {
    const limiter = createTestDeliveryLimiter(new CounterThrottles(), 1);
    await limiter.admit('w1', 0);
    await expect(limiter.admit('w2', 0)).resolves.toBeUndefined();
    await expect(limiter.admit('w1', 0)).rejects.toThrow(GatewayError);
  });

  it('slides: a test older than an hour no longer counts', async () => {
    const limiter = createTestDeliveryLimiter(new CounterThrottles(), 1);
    await limiter.admit('w1', 0);
    await expect(limiter.admit('w1', 3_599_999)).rejects.toThrow(GatewayError);
    await expect(limiter.admit('w1', 3_600_001)).resolves.toBeUndefined();
  });

  it('counts on the port it is given: two limiters over one port (two workers, two replicas) share the limit', async () => {
    const port = new CounterThrottles();
    const [a, b] = [createTestDeliveryLimiter(port), createTestDeliveryLimiter(port)];
    for (let i = 0; i < 10; i += 1) await (i % 2 === 0 ? a : b).admit('w1', i);
    expect((await refusalOf(a.admit('w1', 10))).code).toBe('webhook_test_limit_exceeded');
    expect((await refusalOf(b.admit('w1', 10))).code).toBe('webhook_test_limit_exceeded');
  });

  it('refuses with 503 limits_unavailable when the shared counters cannot be reached (on_outage: fail_closed)', async () => {
    const unreachable: ThrottlePort = {
      reserve: () => Promise.resolve({ admitted: false, waitMs: 5000, unavailable: true }),
      release: () => Promise.resolve(),
      reset: () => Promise.resolve(),
    };
    const e = await refusalOf(createTestDeliveryLimiter(unreachable).admit('w1', 0));
    expect({ status: e.status, code: e.code }).toEqual({ status: 503, code: 'limits_unavailable' });
  });
});
