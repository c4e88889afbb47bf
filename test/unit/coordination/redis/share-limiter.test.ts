/**
 * The limiter a replica falls back on while Redis is down under fail_open (issue 32): each ceiling is cut
 * to this replica's share, floor(ceiling / live replicas), so the replicas together never admit more than
 * the ceiling; a share that rounds to 0 refuses (503) instead of turning into "unmetered".
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMIT_POLICY, type Admission } from '../../../../src/core/limits/rate-limiter.js';
import type { ApiKeyRecord, ProjectRecord } from '../../../../src/core/records.js';
import { ShareLimiter } from '../../../../src/coordination/redis/share-limiter.js';
import { GatewayError } from '../../../../src/errors.js';

const T0 = 1_700_000_000_000;
// base 100 + 50% burst: a ceiling of 150 a minute.
const project: ProjectRecord = { id: 'proj_a', uuid: 'u', slug: 'a', name: 'A', plan: 'paid', requestsPerMinute: 100, tokensPerMinute: 0, defaultWorkspaceId: null, createdAt: 0 };
const key: ApiKeyRecord = {
  id: 'key_1', projectId: 'proj_a', name: null, prefix: 'svc_a_AAAA', scopes: ['inference'], allowedIps: [], blockedIps: [], ipFilter: null,
  expiresAt: null, quotaRequests: 0, quotaWindow: 60, endpointId: null, allowedWorkspaceIds: null, userId: null, issuedBy: null, source: 'config', createdAt: 0, revokedAt: null,
};

function admitted(limiter: ShareLimiter, n: number, p = project, k = key): number {
  let count = 0;
  for (let i = 0; i < n; i++) if (limiter.admit(p, k, 'inference', T0 + i).refusal === null) count += 1;
  return count;
}

describe('ShareLimiter', () => {
  it('admits floor(ceiling / live replicas) of a project ceiling, and says so in the RateLimit view', () => {
    const limiter = new ShareLimiter(DEFAULT_LIMIT_POLICY, () => 3);
    expect(admitted(limiter, 400)).toBe(50);
    const refused = limiter.admit(project, key, 'inference', T0 + 500) as Admission;
    expect(refused.refusal).toMatchObject({ kind: 'requests', by: 'project', limit: 50 });
    expect(limiter.fullCeiling(project, 'inference')).toBe(150);
  });

  it('splits the control-plane ceilings, a key quota and a token limit the same way', () => {
    const limiter = new ShareLimiter(DEFAULT_LIMIT_POLICY, () => 4);
    let management = 0;
    for (let i = 0; i < 100; i++) if (limiter.admit(project, key, 'management', T0 + i).refusal === null) management += 1;
    expect(management).toBe(15); // 60 / 4

    const quotaKey = { ...key, id: 'key_q', quotaRequests: 10 };
    expect(admitted(new ShareLimiter(DEFAULT_LIMIT_POLICY, () => 4), 50, project, quotaKey)).toBe(2); // 10 / 4

    const tokens = new ShareLimiter(DEFAULT_LIMIT_POLICY, () => 3);
    const metered = { ...project, tokensPerMinute: 900 };
    tokens.chargeTokens(project.id, 299, T0);
    expect(tokens.admit(metered, key, 'inference', T0 + 1).refusal).toBeNull();
    tokens.chargeTokens(project.id, 1, T0 + 1);
    expect(tokens.admit(metered, key, 'inference', T0 + 2).refusal).toMatchObject({ kind: 'tokens', limit: 300 });
  });

  it('refuses 503 limits_unavailable when a limit is smaller than the replicas, never treating its share of 0 as unmetered', () => {
    const limiter = new ShareLimiter(DEFAULT_LIMIT_POLICY, () => 5);
    const free = { ...project, plan: 'free' as const, requestsPerMinute: 1 }; // ceiling 3
    let err: unknown = null;
    try {
      limiter.admit(free, key, 'inference', T0);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('limits_unavailable');
    expect((err as GatewayError).message).toMatch(/a limit of 3 cannot be split among the 5 replicas/);
    expect(() => limiter.admit(project, { ...key, quotaRequests: 4 }, 'inference', T0)).toThrow(/a limit of 4 cannot be split/);
    // An unmetered project stays unmetered.
    expect(limiter.admit({ ...project, requestsPerMinute: 0 }, key, 'inference', T0)).toEqual({ view: null, refusal: null });
  });

  it('follows the count as replicas come and go, and counts an unknown or broken count as 1', () => {
    let live = 3;
    const limiter = new ShareLimiter(DEFAULT_LIMIT_POLICY, () => live);
    expect(admitted(limiter, 100)).toBe(50);
    live = 2; // a sibling gone: the share grows to 75 over the same window
    expect(admitted(limiter, 100)).toBe(25);
    for (const broken of [0, -1, Number.NaN, 2.5]) {
      live = broken;
      expect(limiter.replicas()).toBe(1);
    }
  });
});
