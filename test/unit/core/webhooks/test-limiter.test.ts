import { describe, expect, it } from 'vitest';
import { createTestDeliveryLimiter } from '../../../../src/core/webhooks/test-limiter.js';
import { GatewayError } from '../../../../src/errors.js';

describe('createTestDeliveryLimiter', () => {
  it('admits 10 tests per webhook per hour and refuses the 11th with 429 webhook_test_limit_exceeded', () => {
    const limiter = createTestDeliveryLimiter();
    for (let i = 0; i < 10; i += 1) limiter.admit('w1', 1_000_000 + i * 1000);
    let refusal: unknown;
    try {
      limiter.admit('w1', 1_000_000 + 10_000);
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(GatewayError);
    const e = refusal as GatewayError;
    expect({ status: e.status, code: e.code }).toEqual({ status: 429, code: 'webhook_test_limit_exceeded' });
    // The oldest test leaves the window 3600 s after it was sent: 3590 s from now.
    expect(e.headers).toEqual({ 'Retry-After': '3590' });
    expect(e.extra).toMatchObject({ retry_after: 3590 });
  });

  it('counts each webhook separately', () => {
    const limiter = createTestDeliveryLimiter(1);
    limiter.admit('w1', 0);
    expect(() => limiter.admit('w2', 0)).not.toThrow();
    expect(() => limiter.admit('w1', 0)).toThrow(GatewayError);
  });

  it('slides: a test older than an hour no longer counts', () => {
    const limiter = createTestDeliveryLimiter(1);
    limiter.admit('w1', 0);
    expect(() => limiter.admit('w1', 3_599_999)).toThrow(GatewayError);
    expect(() => limiter.admit('w1', 3_600_001)).not.toThrow();
  });
});
