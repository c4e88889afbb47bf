import { describe, expect, it } from 'vitest';
import { refusalError, retryStrategy, writeRateLimitHeaders } from '../../../../src/core/limits/limit-headers.js';
import { inferenceCeiling, limitClassOf, RateLimiter, type LimitView } from '../../../../src/core/limits/rate-limiter.js';
import type { ApiKeyRecord, ProjectRecord } from '../../../../src/core/records.js';

const T0 = 1_700_000_000_000;

function project(over: Partial<ProjectRecord> = {}): ProjectRecord {
  return { id: 'proj_a', uuid: 'u', slug: 'a', name: 'A', plan: 'paid', requestsPerMinute: 1024, tokensPerMinute: 0, defaultWorkspaceId: null, createdAt: 0, ...over };
}

function key(over: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return {
    id: 'key_1', projectId: 'proj_a', name: null, prefix: 'svc_a_AAAA', scopes: ['inference'], allowedIps: [], blockedIps: [], ipFilter: null,
    expiresAt: null, quotaRequests: 0, quotaWindow: 60, endpointId: null, allowedWorkspaceIds: null, userId: null, issuedBy: null, source: 'config', createdAt: 0, revokedAt: null,
    ...over,
  };
}

function headers(view: LimitView | null): Record<string, string> {
  const out: Record<string, string> = {};
  writeRateLimitHeaders(view, (k, v) => (out[k] = v));
  return out;
}

describe('inferenceCeiling (SPEC Limits 2)', () => {
  it.each([
    [1024, 'paid', 1536],
    [67, 'paid', 100],
    [5, 'paid', 10],
    [1, 'free', 3],
    [5, 'free', 7],
    [2, 'free', 3],
    [0, 'paid', 0],
    [0, 'free', 0],
  ] as const)('turns base %i on a %s plan into a ceiling of %i', (base, plan, ceiling) => {
    expect(inferenceCeiling(base, plan)).toBe(ceiling);
  });
});

describe('limitClassOf', () => {
  it.each([
    ['chat', 'POST', '/:project/:endpoint/v1/chat/completions', 'inference'],
    ['models', 'GET', '/:project/v1/models', 'inference'],
    ['exec', 'POST', '/:project/v1/exec/invocations', 'inference'],
    ['responses', 'POST', '/:project/v1/responses', 'inference'],
    ['management', 'POST', '/:project/v1/management/api-keys', 'management'],
    ['webhooks', 'GET', '/:project/v1/webhooks', 'management'],
    ['batches', 'POST', '/:project/v1/batches', 'management'],
    ['uploads', 'POST', '/:project/v1/uploads', 'management'],
    ['slos', 'GET', '/:project/v1/slos', 'management'],
    ['files', 'GET', '/:project/v1/files', 'management'],
    ['files', 'DELETE', '/:project/v1/files/:file', 'management'],
    ['files', 'POST', '/:project/v1/files', 'files'],
    ['files', 'GET', '/:project/v1/files/:file/content', 'files'],
    ['conversations', 'GET', '/:project/v1/conversations/:conversation/items', 'management'],
    ['conversations', 'POST', '/:project/v1/conversations/:conversation/items', 'conversation_items'],
    ['conversations', 'POST', '/:project/v1/conversations', 'management'],
  ])('puts %s %s %s in the %s class', (family, method, pattern, cls) => {
    expect(limitClassOf(family, method, pattern)).toBe(cls);
  });
});

describe('RateLimiter.admit', () => {
  it('counts Remaining down from the ceiling and refuses at 0 without consuming', () => {
    const limiter = new RateLimiter();
    const p = project({ requestsPerMinute: 2 }); // ceiling 10 (paid floor)
    const seen: number[] = [];
    for (let i = 0; i < 10; i++) {
      const a = limiter.admit(p, key(), 'inference', T0 + i);
      expect(a.refusal).toBeNull();
      seen.push(a.view?.remaining ?? -1);
    }
    expect(seen).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    const refused = limiter.admit(p, key(), 'inference', T0 + 20);
    expect(refused.refusal).toMatchObject({ kind: 'requests', by: 'project', limit: 10, windowSeconds: 60 });
    expect(refused.view).toMatchObject({ limit: 10, remaining: 0 });
    expect(refused.refusal?.retryAfterSeconds).toBe(60);
    // The slots come back one window after the latest request of their 100 ms bucket.
    expect(limiter.admit(p, key(), 'inference', T0 + 60_008).refusal).not.toBeNull();
    expect(limiter.admit(p, key(), 'inference', T0 + 60_009).refusal).toBeNull();
  });

  it('reports Reset as the seconds until the oldest counted request leaves', () => {
    const limiter = new RateLimiter();
    const p = project();
    limiter.admit(p, key(), 'inference', T0);
    const later = limiter.admit(p, key(), 'inference', T0 + 45_000);
    expect(later.view?.resetSeconds).toBe(15);
  });

  it('omits every number for an unmetered project (limit 0) with no key quota', () => {
    const limiter = new RateLimiter();
    const a = limiter.admit(project({ requestsPerMinute: 0 }), key(), 'inference', T0);
    expect(a).toEqual({ view: null, refusal: null });
    expect(headers(a.view)).toEqual({});
  });

  it('lets the tighter key quota win and report itself in the headers', () => {
    const limiter = new RateLimiter();
    const k = key({ quotaRequests: 3, quotaWindow: 10 });
    const views = [0, 1, 2].map((i) => limiter.admit(project(), k, 'inference', T0 + i).view);
    expect(views.map((v) => [v?.limit, v?.remaining])).toEqual([[3, 2], [3, 1], [3, 0]]);
    const refused = limiter.admit(project(), k, 'inference', T0 + 5);
    expect(refused.refusal).toMatchObject({ kind: 'requests', by: 'key', limit: 3, windowSeconds: 10, retryAfterSeconds: 10 });
    expect(limiter.admit(project(), k, 'inference', T0 + 10_020).refusal).toBeNull();
  });

  it('applies a key quota to an unmetered project', () => {
    const limiter = new RateLimiter();
    const k = key({ quotaRequests: 1, quotaWindow: 60 });
    expect(limiter.admit(project({ requestsPerMinute: 0 }), k, 'inference', T0).view).toMatchObject({ limit: 1, remaining: 0 });
    expect(limiter.admit(project({ requestsPerMinute: 0 }), k, 'inference', T0 + 1).refusal?.kind).toBe('requests');
  });

  it('shows the project counter when it has fewer requests left than a looser key quota', () => {
    const limiter = new RateLimiter();
    const view = limiter.admit(project({ requestsPerMinute: 2 }), key({ quotaRequests: 100 }), 'inference', T0).view;
    expect(view).toMatchObject({ limit: 10, remaining: 9 });
  });

  it('does not spend the key quota when the project refuses, nor the project when the quota refuses', () => {
    const limiter = new RateLimiter();
    const p = project({ requestsPerMinute: 2 });
    const k = key({ id: 'key_q', quotaRequests: 20 });
    for (let i = 0; i < 10; i++) limiter.admit(p, key({ id: `key_other_${i}` }), 'inference', T0);
    expect(limiter.admit(p, k, 'inference', T0).refusal?.kind).toBe('requests');
    // The quota was not touched: 20 left, reported once the project window frees up.
    expect(limiter.admit(p, k, 'inference', T0 + 60_100).view).toMatchObject({ limit: 10, remaining: 9 });
  });

  it('keeps management, files, conversation items and inference on separate counters', () => {
    const limiter = new RateLimiter({ managementPerMinute: 2, filesPerMinute: 1, conversationItemsPerMinute: 1 });
    const p = project({ requestsPerMinute: 2 });
    expect(limiter.admit(p, key(), 'management', T0).view).toMatchObject({ limit: 2, remaining: 1 });
    expect(limiter.admit(p, key(), 'management', T0).view).toMatchObject({ limit: 2, remaining: 0 });
    expect(limiter.admit(p, key(), 'management', T0).refusal?.kind).toBe('requests');
    expect(limiter.admit(p, key(), 'inference', T0).view).toMatchObject({ limit: 10, remaining: 9 });
    expect(limiter.admit(p, key(), 'files', T0).view).toMatchObject({ limit: 1, remaining: 0 });
    expect(limiter.admit(p, key(), 'conversation_items', T0).view).toMatchObject({ limit: 1, remaining: 0 });
  });

  it('gives management 60 per minute with no burst by default', () => {
    const limiter = new RateLimiter();
    expect(limiter.ceiling(project(), 'management')).toBe(60);
    expect(limiter.ceiling(project(), 'files')).toBe(600);
    expect(limiter.ceiling(project(), 'conversation_items')).toBe(600);
  });

  it('admits exactly the ceiling out of a burst of 500', () => {
    const limiter = new RateLimiter();
    const p = project({ requestsPerMinute: 67 });
    const admitted = Array.from({ length: 500 }, () => limiter.admit(p, key(), 'inference', T0)).filter((a) => !a.refusal).length;
    expect(admitted).toBe(100);
  });
});

/**
 * Issue 21: the first 429 of a window said Retry-After: 61 (the window's 100 ms buckets rounded past 60),
 * which the AI SDK and the openai SDKs do not honour and LangChain fails on at once. A refusal on a minute
 * window waits 1 to 60 s, says so in Retry-After, retry_after and RateLimit-Reset alike, and is right.
 */
describe('the 429 of a minute window', () => {
  const free = project({ plan: 'free', requestsPerMinute: 1 }); // ceiling 3
  const FIRST = T0 + 37; // off the 100 ms grid, as real requests are

  function fillThenRefuse(offsetMs: number) {
    const limiter = new RateLimiter();
    for (let i = 0; i < 3; i++) expect(limiter.admit(free, key(), 'inference', FIRST).refusal).toBeNull();
    const at = FIRST + offsetMs;
    const refused = limiter.admit(free, key(), 'inference', at);
    if (!refused.refusal) throw new Error('expected a refusal');
    return { limiter, at, refusal: refused.refusal, view: refused.view };
  }

  it.each([0, 1, 50, 62, 63, 99, 100, 999, 1000, 1001, 30_000, 59_000, 59_001, 59_999])(
    'refuses the 4th request of an empty window %i ms after the first with Retry-After = ceil of the true wait, at most 60',
    (offsetMs) => {
      const { refusal, view } = fillThenRefuse(offsetMs);
      const expected = Math.ceil((60_000 - offsetMs) / 1000);
      expect(refusal.retryAfterSeconds).toBe(expected);
      expect(refusal.retryAfterSeconds).toBeGreaterThanOrEqual(1);
      expect(refusal.retryAfterSeconds).toBeLessThanOrEqual(60);
      expect(view).toEqual({ limit: 3, remaining: 0, resetSeconds: refusal.retryAfterSeconds });

      const err = refusalError(refusal);
      expect(err.headers).toEqual({ 'Retry-After': String(refusal.retryAfterSeconds) });
      expect(err.toEnvelope().error).toMatchObject({ retry_after: refusal.retryAfterSeconds });
      expect(err.retryable).toBe(true);
    },
  );

  it.each([0, 1, 63, 999, 30_000, 59_999])('is right to say so: refused just before Retry-After, admitted at it (refused at +%i ms)', (offsetMs) => {
    const { limiter, at, refusal } = fillThenRefuse(offsetMs);
    const trueWaitMs = 60_000 - offsetMs;
    expect(refusal.retryAfterSeconds * 1000 - trueWaitMs).toBeGreaterThanOrEqual(0);
    expect(refusal.retryAfterSeconds * 1000 - trueWaitMs).toBeLessThan(1000);
    // Refusals consume nothing, so probing does not move the answer.
    expect(limiter.admit(free, key(), 'inference', at + trueWaitMs - 1).refusal?.kind).toBe('requests');
    expect(limiter.admit(free, key(), 'inference', at + refusal.retryAfterSeconds * 1000).refusal).toBeNull();
  });

  it('waits for the oldest request of a spread-out window, never for the window from the refusal', () => {
    const limiter = new RateLimiter();
    for (const t of [FIRST, FIRST + 20_000, FIRST + 40_000]) limiter.admit(free, key(), 'inference', t);
    expect(limiter.admit(free, key(), 'inference', FIRST + 40_000).refusal?.retryAfterSeconds).toBe(20);
    expect(limiter.admit(free, key(), 'inference', FIRST + 59_999).refusal?.retryAfterSeconds).toBe(1);
    const next = limiter.admit(free, key(), 'inference', FIRST + 60_000);
    expect(next.refusal).toBeNull();
    // Reset after an admission is bounded the same way: the next oldest leaves 20 s after the first.
    expect(next.view).toMatchObject({ remaining: 0, resetSeconds: 20 });
  });

  it('reports RateLimit-Reset of at most 60 on the first request of an empty window', () => {
    const view = new RateLimiter().admit(free, key(), 'inference', FIRST).view;
    expect(view).toEqual({ limit: 3, remaining: 2, resetSeconds: 60 });
  });

  it('bounds a key quota refusal by the quota window, for both counters full', () => {
    const limiter = new RateLimiter();
    const k = key({ quotaRequests: 3, quotaWindow: 10 });
    for (let i = 0; i < 3; i++) limiter.admit(free, k, 'inference', FIRST);
    const refused = limiter.admit(free, k, 'inference', FIRST);
    // Both are full; the project's minute frees later, so it binds, and the wait covers both.
    expect(refused.refusal).toMatchObject({ by: 'project', retryAfterSeconds: 60 });
    expect(refused.view?.resetSeconds).toBe(60);
    const quotaOnly = new RateLimiter();
    for (let i = 0; i < 3; i++) quotaOnly.admit(project(), k, 'inference', FIRST);
    expect(quotaOnly.admit(project(), k, 'inference', FIRST).refusal).toMatchObject({ by: 'key', retryAfterSeconds: 10 });
  });
});

describe('RateLimiter token limit (SPEC Limits 3)', () => {
  it('lets one large turn overshoot, then refuses the next request for 60 s', () => {
    const limiter = new RateLimiter();
    const p = project({ tokensPerMinute: 100 });
    expect(limiter.admit(p, key(), 'inference', T0).refusal).toBeNull();
    limiter.chargeTokens(p.id, 5000, T0 + 10);
    const refused = limiter.admit(p, key(), 'inference', T0 + 20);
    expect(refused.refusal).toEqual({ kind: 'tokens', limit: 100, retryAfterSeconds: 60 });
    // The refused request consumed no request slot.
    expect(refused.view?.remaining).toBe(1535 - 0);
    expect(limiter.admit(p, key(), 'inference', T0 + 60_200).refusal).toBeNull();
  });

  it('never limits tokens when the token limit is 0, nor on management routes', () => {
    const limiter = new RateLimiter();
    limiter.chargeTokens('proj_a', 10_000_000, T0);
    expect(limiter.admit(project({ tokensPerMinute: 0 }), key(), 'inference', T0).refusal).toBeNull();
    expect(limiter.admit(project({ tokensPerMinute: 10 }), key(), 'management', T0).refusal).toBeNull();
  });

  it('ignores zero and negative charges', () => {
    const limiter = new RateLimiter();
    limiter.chargeTokens('proj_a', 0, T0);
    limiter.chargeTokens('proj_a', -5, T0);
    expect(limiter.admit(project({ tokensPerMinute: 1 }), key(), 'inference', T0).refusal).toBeNull();
  });
});

describe('rate-limit headers and 429s', () => {
  it('writes the six numbers and the warning at or below 20% remaining, 0 included', () => {
    expect(headers({ limit: 10, remaining: 3, resetSeconds: 59 })).toEqual({
      'RateLimit-Limit': '10',
      'RateLimit-Remaining': '3',
      'RateLimit-Reset': '59',
      'X-RateLimit-Limit': '10',
      'X-RateLimit-Remaining': '3',
      'X-RateLimit-Reset': '59',
    });
    expect(headers({ limit: 10, remaining: 2, resetSeconds: 1 })['X-RateLimit-Warning']).toBe('approaching_limit');
    expect(headers({ limit: 10, remaining: 0, resetSeconds: 1 })['X-RateLimit-Warning']).toBe('approaching_limit');
    expect(headers({ limit: 1536, remaining: 308, resetSeconds: 1 })['X-RateLimit-Warning']).toBeUndefined();
    expect(headers({ limit: 1536, remaining: 307, resetSeconds: 1 })['X-RateLimit-Warning']).toBe('approaching_limit');
  });

  it('renders a request refusal as rate_limit_exceeded with retry_after, retry_strategy and Retry-After', () => {
    const err = refusalError({ kind: 'requests', by: 'project', limit: 10, windowSeconds: 60, retryAfterSeconds: 7 });
    expect(err.toEnvelope().error).toMatchObject({
      code: 'rate_limit_exceeded',
      type: 'rate_limit_error',
      param: null,
      retry_after: 7,
      retry_strategy: { type: 'exponential', initial_delay_ms: 7000, max_delay_ms: 60_000, multiplier: 2, jitter: true },
    });
    expect(err.status).toBe(429);
    expect(err.headers).toEqual({ 'Retry-After': '7' });
  });

  it('renders a token refusal as token_rate_limit_exceeded with Retry-After 60', () => {
    const err = refusalError({ kind: 'tokens', limit: 100, retryAfterSeconds: 60 });
    expect(err.toEnvelope().error).toMatchObject({ code: 'token_rate_limit_exceeded', retry_after: 60, retry_strategy: retryStrategy('fixed', 60) });
    expect(err.headers).toEqual({ 'Retry-After': '60' });
  });

  it('caps exponential backoff at the quota window when it is longer than a minute', () => {
    expect(retryStrategy('requests', 3000, 3600)).toMatchObject({ initial_delay_ms: 3_000_000, max_delay_ms: 3_600_000 });
  });
});
