import { describe, expect, it } from 'vitest';
import { createEnrollmentLimiter } from '../../../../src/core/exec/enrollment-limiter.js';
import { CounterThrottles } from '../../../../src/core/limits/counter-throttles.js';

describe('agent connection (enrollment) rate limit', async () => {
  it('admits the per-key limit within 60 s, refuses the next with 429 and a Retry-After, and admits again as the window slides', async () => {
    const limiter = createEnrollmentLimiter({ perKey: 2, perProject: 100 }, new CounterThrottles());
    expect(await limiter.admit('p', 'k1', 0)).toBeNull();
    expect(await limiter.admit('p', 'k1', 10_000)).toBeNull();
    const refused = await limiter.admit('p', 'k1', 20_000);
    expect(refused).toMatchObject({ code: 'rate_limit_exceeded', status: 429, headers: { 'Retry-After': '40' } });
    expect(refused?.message).toBe("This key's limit of 2 agent connections (enrollments) per 60 s is reached; retry in 40 s.");
    // A refusal consumed nothing: once the first connection leaves the window, one more is admitted.
    expect(await limiter.admit('p', 'k1', 60_000)).toBeNull();
    expect(await limiter.admit('p', 'k1', 60_001)).not.toBeNull();
  });

  it('counts every key of a project against the per-project limit, and no other project', async () => {
    const limiter = createEnrollmentLimiter({ perKey: 100, perProject: 3 }, new CounterThrottles());
    for (const key of ['a', 'b', 'c']) expect(await limiter.admit('p', key, 0)).toBeNull();
    expect((await limiter.admit('p', 'd', 0))?.message).toMatch(/^Project p's limit of 3 agent connections/);
    expect(await limiter.admit('q', 'd', 0)).toBeNull();
  });

  it('is unmetered at 0', async () => {
    const limiter = createEnrollmentLimiter({ perKey: 0, perProject: 0 }, new CounterThrottles());
    for (let i = 0; i < 1000; i++) expect(await limiter.admit('p', 'k', i)).toBeNull();
  });
});
