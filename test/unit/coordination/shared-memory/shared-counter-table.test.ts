import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { RateLimiter, type Admission } from '../../../../src/core/limits/rate-limiter.js';
import type { ApiKeyRecord, ProjectRecord } from '../../../../src/core/records.js';
import { createSharedCounterBuffer, SharedCounterTable } from '../../../../src/coordination/shared-memory/shared-counter-table.js';

const T0 = 1_700_000_000_000;

function project(over: Partial<ProjectRecord> = {}): ProjectRecord {
  return { id: 'proj_a', uuid: 'u', slug: 'a', name: 'A', plan: 'paid', requestsPerMinute: 1000, tokensPerMinute: 0, defaultWorkspaceId: null, createdAt: 0, ...over };
}

function key(over: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return {
    id: 'key_1', projectId: 'proj_a', name: null, prefix: 'svc_a_AAAA', scopes: ['inference'], allowedIps: [], blockedIps: [], ipFilter: null,
    expiresAt: null, quotaRequests: 0, quotaWindow: 60, endpointId: null, allowedWorkspaceIds: null, userId: null, issuedBy: null, source: 'config', createdAt: 0, revokedAt: null,
    ...over,
  };
}

const sharedLimiter = (buffer: SharedArrayBuffer, tag = 1, onFull?: (name: string) => void): RateLimiter =>
  new RateLimiter(undefined, new SharedCounterTable(buffer, { tag, ...(onFull ? { onFull } : {}) }));

describe('RateLimiter over a SharedCounterTable', () => {
  it('decides exactly as the private counters do, call for call', () => {
    const local = new RateLimiter();
    const shared = sharedLimiter(createSharedCounterBuffer(16));
    const p = project({ requestsPerMinute: 20, tokensPerMinute: 500 });
    const keys = [key(), key({ id: 'key_2', quotaRequests: 7, quotaWindow: 10 })];
    let now = T0;
    const seen: [Admission, Admission][] = [];
    for (let i = 0; i < 400; i++) {
      now += (i * 7919) % 900;
      const k = keys[i % 2] as ApiKeyRecord;
      seen.push([local.admit(p, k, i % 5 === 0 ? 'management' : 'inference', now), shared.admit(p, k, i % 5 === 0 ? 'management' : 'inference', now)]);
      if (i % 3 === 0) {
        local.chargeTokens(p.id, 37, now);
        shared.chargeTokens(p.id, 37, now);
      }
    }
    for (const [a, b] of seen) expect(b).toEqual(a);
    expect(seen.some(([a]) => a.refusal !== null)).toBe(true);
  });

  it('shares one counter per name between tables over one buffer', () => {
    const buffer = createSharedCounterBuffer(8);
    const a = sharedLimiter(buffer, 1);
    const b = sharedLimiter(buffer, 2);
    const p = project({ requestsPerMinute: 2 }); // ceiling 10 on a paid plan
    for (let i = 0; i < 6; i++) expect(a.admit(p, key(), 'inference', T0).refusal).toBeNull();
    for (let i = 0; i < 4; i++) expect(b.admit(p, key(), 'inference', T0).refusal).toBeNull();
    expect(a.admit(p, key(), 'inference', T0).refusal?.kind).toBe('requests');
    expect(b.admit(p, key(), 'inference', T0).refusal?.kind).toBe('requests');
    expect(new SharedCounterTable(buffer, { tag: 3 }).allocated).toBe(1);
  });

  it('refuses on tokens another table charged', () => {
    const buffer = createSharedCounterBuffer(8);
    const a = sharedLimiter(buffer, 1);
    const b = sharedLimiter(buffer, 2);
    const p = project({ tokensPerMinute: 100 });
    expect(b.admit(p, key(), 'inference', T0).refusal).toBeNull();
    a.chargeTokens(p.id, 150, T0 + 1);
    expect(b.admit(p, key(), 'inference', T0 + 2).refusal?.kind).toBe('tokens');
  });

  it('gives a private counter, and says so, once the table is full', () => {
    const buffer = createSharedCounterBuffer(1);
    const full: string[] = [];
    const table = new SharedCounterTable(buffer, { tag: 1, onFull: (name) => full.push(name) });
    const limiter = new RateLimiter(undefined, table);
    expect(limiter.admit(project(), key(), 'inference', T0).refusal).toBeNull();
    expect(limiter.admit(project({ id: 'proj_b' }), key(), 'inference', T0).refusal).toBeNull();
    expect(full).toEqual(['project:proj_b:inference']);
    expect(table.health()).toMatchObject({ name: 'shared_counters', ok: true, detail: expect.stringContaining('full (1)') });
  });

  it('admits exactly the limit when two worker threads race for it', async () => {
    // The compiled module (dist/): a worker thread has no TypeScript loader.
    const dist = join(process.cwd(), 'dist/src');
    const buffer = createSharedCounterBuffer(16);
    const start = new Int32Array(new SharedArrayBuffer(4));
    const code = `
      const { workerData, parentPort } = require('node:worker_threads');
      (async () => {
        const { RateLimiter } = await import(workerData.dist + '/core/limits/rate-limiter.js');
        const { SharedCounterTable } = await import(workerData.dist + '/coordination/shared-memory/shared-counter-table.js');
        const limiter = new RateLimiter(undefined, new SharedCounterTable(workerData.buffer, { tag: workerData.tag }));
        const project = { id: 'proj_race', plan: 'paid', requestsPerMinute: 20000, tokensPerMinute: 0 };
        const key = { id: 'key_race', quotaRequests: 25000, quotaWindow: 60 };
        Atomics.add(workerData.start, 0, 1);
        while (Atomics.load(workerData.start, 0) < 2) {}
        let admitted = 0;
        for (let i = 0; i < 40000; i++) if (limiter.admit(project, key, 'inference', ${T0} + i / 1000).refusal === null) admitted++;
        parentPort.postMessage(admitted);
      })();`;
    const run = (tag: number): Promise<number> =>
      new Promise((resolve, reject) => {
        const worker = new Worker(code, { eval: true, workerData: { dist, buffer, start, tag } });
        worker.once('message', (n: number) => resolve(n));
        worker.once('error', reject);
      });
    const [a, b] = await Promise.all([run(1), run(2)]);
    // Ceiling: 20,000 + 50% burst = 30,000; the key's quota of 25,000 binds first.
    expect(a + b).toBe(25_000);
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(0);
  });
});
