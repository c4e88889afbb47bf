/**
 * What every implementation of the admission port must do (issue 12), run against each one: the
 * in-process RateLimiter, Redis, and the shared-memory one of `serve --workers N` (hono's
 * `common.case.test.ts` pattern). The ports are built with DEFAULT_LIMIT_POLICY. Time is injected: no test
 * sleeps. The last case replays a random schedule against a RateLimiter and asks for the same answer at
 * every step, counts, waits and headers included.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AdmissionPort } from '../../src/core/coordination/admission-port.js';
import { DEFAULT_LIMIT_POLICY, RateLimiter, type Admission, type LimitClass } from '../../src/core/limits/rate-limiter.js';
import type { ApiKeyRecord, ProjectRecord } from '../../src/core/records.js';

export interface PortUnderTest {
  readonly port: AdmissionPort;
  close(): Promise<void>;
}

const T0 = 1_700_000_000_000;

let projects = 0;
/** A project of its own per test, so that implementations sharing a store never see another test's counts. */
function project(over: Partial<ProjectRecord> = {}): ProjectRecord {
  projects += 1;
  return { id: `proj_c${process.pid}_${projects}`, uuid: 'u', slug: 'c', name: 'C', plan: 'paid', requestsPerMinute: 67, tokensPerMinute: 0, defaultWorkspaceId: null, createdAt: 0, ...over };
}

function key(p: ProjectRecord, over: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return {
    id: `key_${p.id}`, projectId: p.id, name: null, prefix: 'svc_c_AAAA', scopes: ['inference'], allowedIps: [], blockedIps: [], ipFilter: null,
    expiresAt: null, quotaRequests: 0, quotaWindow: 60, endpointId: null, allowedWorkspaceIds: null, userId: null, issuedBy: null, source: 'config', createdAt: 0, revokedAt: null,
    ...over,
  };
}

export function admissionContract(name: string, makePort: () => Promise<PortUnderTest>): void {
  describe(`admission port contract: ${name}`, () => {
    let under: PortUnderTest;
    beforeEach(async () => {
      under = await makePort();
    });
    afterEach(async () => {
      await under.close();
    });
    const admit = async (p: ProjectRecord, k: ApiKeyRecord, cls: LimitClass, now: number): Promise<Admission> => await under.port.admit(p, k, cls, now);
    /** `n` admissions one after the other at `now`; how many were admitted. */
    const admitMany = async (n: number, p: ProjectRecord, k: ApiKeyRecord, cls: LimitClass, now: number): Promise<number> => {
      let admitted = 0;
      for (let i = 0; i < n; i++) if ((await admit(p, k, cls, now)).refusal === null) admitted += 1;
      return admitted;
    };

    it('admits base + 50% burst on inference, then refuses by project with a 60 s wait', async () => {
      const p = project({ requestsPerMinute: 67 });
      const k = key(p);
      expect(await admitMany(100, p, k, 'inference', T0)).toBe(100);
      expect(await admit(p, k, 'inference', T0 + 10)).toEqual({
        view: { limit: 100, remaining: 0, resetSeconds: 60 },
        refusal: { kind: 'requests', by: 'project', limit: 100, windowSeconds: 60, retryAfterSeconds: 60 },
      });
    });

    it('applies the policy ceiling of a control-plane class, with no burst', async () => {
      const p = project({ requestsPerMinute: 1 });
      const k = key(p);
      expect(await admitMany(DEFAULT_LIMIT_POLICY.managementPerMinute + 5, p, k, 'management', T0)).toBe(DEFAULT_LIMIT_POLICY.managementPerMinute);
      // Classes count apart: inference still has its own ceiling (free of the management traffic).
      expect((await admit(p, k, 'inference', T0)).refusal).toBeNull();
    });

    it('reports the binding counter in the headers: the one with the fewest requests left', async () => {
      const p = project({ requestsPerMinute: 67 });
      const k = key(p, { quotaRequests: 5, quotaWindow: 10 });
      expect(await admit(p, k, 'inference', T0)).toEqual({ view: { limit: 5, remaining: 4, resetSeconds: 10 }, refusal: null });
      const roomy = key(p, { id: `${k.id}_roomy`, quotaRequests: 500, quotaWindow: 3600 });
      expect(await admit(p, roomy, 'inference', T0 + 1500)).toEqual({ view: { limit: 100, remaining: 98, resetSeconds: 59 }, refusal: null });
    });

    it("refuses by key once the key's quota is spent, naming the quota's window", async () => {
      const p = project({ requestsPerMinute: 67 });
      const k = key(p, { quotaRequests: 3, quotaWindow: 10 });
      expect(await admitMany(3, p, k, 'inference', T0)).toBe(3);
      expect(await admit(p, k, 'inference', T0 + 4000)).toEqual({
        view: { limit: 3, remaining: 0, resetSeconds: 6 },
        refusal: { kind: 'requests', by: 'key', limit: 3, windowSeconds: 10, retryAfterSeconds: 6 },
      });
    });

    it('consumes nothing on a refusal', async () => {
      const p = project({ requestsPerMinute: 67 });
      const k = key(p, { quotaRequests: 2, quotaWindow: 60 });
      expect(await admitMany(50, p, k, 'inference', T0)).toBe(2);
      // 48 refusals later the project counter still holds the 2 admitted requests only.
      const other = key(p, { id: `${k.id}_other` });
      expect((await admit(p, other, 'inference', T0)).view).toEqual({ limit: 100, remaining: 97, resetSeconds: 60 });
    });

    it('refuses inference once the tokens of the minute are spent, and not the control plane', async () => {
      const p = project({ requestsPerMinute: 67, tokensPerMinute: 100 });
      const k = key(p);
      expect((await admit(p, k, 'inference', T0)).refusal).toBeNull();
      under.port.chargeTokens(p.id, 60, T0 + 1);
      expect((await admit(p, k, 'inference', T0 + 2)).refusal).toBeNull();
      under.port.chargeTokens(p.id, 40, T0 + 3);
      expect(await admit(p, k, 'inference', T0 + 4)).toEqual({
        view: { limit: 100, remaining: 98, resetSeconds: 60 },
        refusal: { kind: 'tokens', limit: 100, retryAfterSeconds: 60 },
      });
      expect((await admit(p, k, 'management', T0 + 5)).refusal).toBeNull();
      // The charges leave the window a minute after they were made.
      expect((await admit(p, k, 'inference', T0 + 60_003)).refusal).toBeNull();
    });

    it('slides the window on the injected clock: a request leaves 60 s after it was admitted', async () => {
      const p = project({ requestsPerMinute: 7 });
      const k = key(p);
      expect(await admitMany(10, p, k, 'inference', T0)).toBe(10);
      expect((await admit(p, k, 'inference', T0 + 30_000)).refusal).toMatchObject({ retryAfterSeconds: 30 });
      expect((await admit(p, k, 'inference', T0 + 59_999)).refusal).toMatchObject({ retryAfterSeconds: 1 });
      expect(await admit(p, k, 'inference', T0 + 60_000)).toEqual({ view: { limit: 10, remaining: 9, resetSeconds: 60 }, refusal: null });
    });

    it('leaves a request with no limit unmetered', async () => {
      const p = project({ requestsPerMinute: 0 });
      expect(await admit(p, key(p), 'inference', T0)).toEqual({ view: null, refusal: null });
    });

    it('admits exactly 100 of 1,000 concurrent requests against a limit of 100', async () => {
      const p = project({ requestsPerMinute: 67 });
      const k = key(p);
      const results = await Promise.all(Array.from({ length: 1000 }, (_, i) => admit(p, k, 'inference', T0 + (i % 7))));
      expect(results.filter((r) => r.refusal === null)).toHaveLength(100);
    });

    it('answers as RateLimiter does at every step of a random schedule', async () => {
      const reference = new RateLimiter(DEFAULT_LIMIT_POLICY);
      const random = seeded(12);
      const ps = [project({ requestsPerMinute: 7, tokensPerMinute: 50 }), project({ plan: 'free', requestsPerMinute: 2 }), project({ requestsPerMinute: 30, tokensPerMinute: 200 })];
      const ks = ps.flatMap((p, i) => [key(p), key(p, { id: `${p.id}_q1`, quotaRequests: 2 + i, quotaWindow: 1 }), key(p, { id: `${p.id}_q10`, quotaRequests: 4, quotaWindow: 10 })]);
      const classes: LimitClass[] = ['inference', 'inference', 'inference', 'management', 'files'];
      let now = T0 + Math.floor(random() * 60_000);
      for (let step = 0; step < 600; step++) {
        now += random() < 0.02 ? 70_000 : Math.floor(random() * 700);
        const k = ks[Math.floor(random() * ks.length)] as ApiKeyRecord;
        const p = ps.find((x) => x.id === k.projectId) as ProjectRecord;
        if (random() < 0.15) {
          const tokens = Math.floor(random() * 40);
          reference.chargeTokens(p.id, tokens, now);
          under.port.chargeTokens(p.id, tokens, now);
          continue;
        }
        const cls = classes[Math.floor(random() * classes.length)] as LimitClass;
        expect({ step, ...(await admit(p, k, cls, now)) }).toEqual({ step, ...reference.admit(p, k, cls, now) });
      }
    });
  });
}

/** mulberry32: the same schedule on every run. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
