import { describe, expect, it } from 'vitest';
import { EndpointPool, resolveServers, type PoolDeps, type PoolServer } from '../../../src/upstream/upstream-pool.js';

interface Harness {
  readonly pool: EndpointPool;
  readonly changes: string[];
  /** Pending probes, in start order: settle one with null (answered) or a cause. */
  readonly probes: { server: string; settle: (failure: string | null) => void }[];
  advance(ms: number): void;
}

function harness(servers: { base_url: string; weight?: number }[], policy = { failure_threshold: 2, cooldown_ms: 1000 }): Harness {
  let now = 0;
  const changes: string[] = [];
  const probes: Harness['probes'] = [];
  const deps: PoolDeps = {
    now: () => now,
    probe: (server) =>
      new Promise<string | null>((resolve) => {
        probes.push({ server: server.url, settle: resolve });
      }),
    onChange: (_pool, server, change) => changes.push(`${server.url} ${change}`),
  };
  const upstream = { base_url: servers[0]?.base_url ?? '', model: 'm', api_key_env: undefined, servers: servers.map((s) => ({ base_url: s.base_url, api_key_env: undefined, weight: s.weight ?? 1 })), health: policy };
  const { servers: specs, policy: p } = resolveServers(upstream, {});
  return { pool: new EndpointPool({ id: 'e1', slug: 'chat', projectId: 'proj_a' }, specs, p, deps), changes, probes, advance: (ms) => (now += ms) };
}

const A = 'http://a.test:1/v1';
const B = 'http://b.test:2/v1';
const urls = (picked: (PoolServer | null)[]): (string | null)[] => picked.map((s) => s?.url ?? null);
const flush = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('EndpointPool', () => {
  it('alternates between equal idle servers and prefers the less loaded one', () => {
    const { pool } = harness([{ base_url: A }, { base_url: B }]);
    const first = pool.pick(null);
    const second = pool.pick(null);
    expect(urls([first, second])).toEqual([A, B]);
    // A finishes; B still has one outstanding: A is chosen twice in a row now.
    pool.release(first as PoolServer);
    expect(urls([pool.pick(null)])).toEqual([A]);
    expect(pool.servers.map((s) => s.outstanding)).toEqual([1, 1]);
  });

  it('spreads concurrent load in proportion to weight', () => {
    const { pool } = harness([{ base_url: A, weight: 1 }, { base_url: B, weight: 3 }]);
    for (let i = 0; i < 8; i += 1) pool.pick(null);
    expect(pool.servers.map((s) => s.outstanding)).toEqual([2, 6]);
  });

  it('never picks the excluded server for a retry', () => {
    const { pool } = harness([{ base_url: A }, { base_url: B }]);
    const a = pool.pick(null) as PoolServer;
    expect(pool.pick(a)?.url).toBe(B);
    const single = harness([{ base_url: A }]).pool;
    expect(single.pick(single.servers[0] as PoolServer)).toBeNull();
  });

  it('takes a failing server out and sends nothing to it until a probe brings it back', async () => {
    const h = harness([{ base_url: A }, { base_url: B }]);
    const a = h.pool.servers[0] as PoolServer;
    h.pool.failed(a, 'ECONNREFUSED a');
    h.pool.failed(a, 'ECONNREFUSED a');
    expect(h.changes).toEqual([`${A} taken_out`]);
    expect(urls([h.pool.pick(null), h.pool.pick(null), h.pool.pick(null)])).toEqual([B, B, B]);
    expect(h.probes).toHaveLength(0);

    // Cooldown over: the next read starts one probe; the server stays out while it runs.
    h.advance(1000);
    expect(h.pool.pick(null)?.url).toBe(B);
    expect(h.probes.map((p) => p.server)).toEqual([A]);
    expect(h.pool.report().servers[0]?.state).toBe('probing');
    h.probes[0]?.settle(null);
    await flush();
    expect(h.changes).toEqual([`${A} taken_out`, `${A} back`]);
    expect(h.pool.report().servers[0]).toMatchObject({ state: 'up', consecutive_failures: 0 });
  });

  it('keeps a server out for another cooldown when its probe fails', async () => {
    const h = harness([{ base_url: A }, { base_url: B }]);
    const a = h.pool.servers[0] as PoolServer;
    h.pool.failed(a, 'ECONNREFUSED a');
    h.pool.failed(a, 'ECONNREFUSED a');
    h.advance(1000);
    expect(h.pool.healthy).toBe(true);
    h.probes[0]?.settle('ECONNREFUSED a (probe)');
    await flush();
    expect(h.changes).toEqual([`${A} taken_out`, `${A} still_down`]);
    expect(h.pool.report().servers[0]).toMatchObject({ state: 'down', last_failure: 'ECONNREFUSED a (probe)', retry_in_ms: 1000 });
    h.advance(999);
    h.pool.pick(null);
    expect(h.probes).toHaveLength(1);
  });

  it('counts 502/503/504 answers as failures and any other answer as proof of life', () => {
    const h = harness([{ base_url: A }]);
    const a = h.pool.servers[0] as PoolServer;
    h.pool.answered(a, 503, 'HTTP 503 from a');
    h.pool.answered(a, 401, 'HTTP 401 from a');
    h.pool.answered(a, 502, 'HTTP 502 from a');
    expect(a.health.state).toBe('up');
    h.pool.answered(a, 504, 'HTTP 504 from a');
    expect(a.health.state).toBe('down');
    expect(h.pool.healthy).toBe(false);
  });

  it('reports no server and a settled probe to wait for when every server is out', async () => {
    const h = harness([{ base_url: A }]);
    const a = h.pool.servers[0] as PoolServer;
    h.pool.failed(a, 'x');
    h.pool.failed(a, 'x');
    expect(h.pool.pick(null)).toBeNull();
    expect(h.pool.probeSettled()).toBeNull();
    h.advance(1000);
    const settled = h.pool.probeSettled();
    expect(settled).not.toBeNull();
    h.probes[0]?.settle(null);
    await settled;
    expect(h.pool.pick(null)?.url).toBe(A);
  });

  it('resolves keys from the environment once, and names a key variable that is not set', () => {
    const upstream = { base_url: A, model: 'm', api_key_env: 'K_SHARED', servers: [{ base_url: A, api_key_env: 'K_SHARED', weight: 1 }, { base_url: B, api_key_env: 'K_MISSING', weight: 1 }], health: { failure_threshold: 3, cooldown_ms: 10_000 } };
    const env: NodeJS.ProcessEnv = { K_SHARED: 'secret' };
    const { servers } = resolveServers(upstream, env);
    env.K_SHARED = 'changed later';
    expect(servers.map((s) => [s.apiKey, s.missingKeyEnv])).toEqual([['secret', null], [null, 'K_MISSING']]);
  });

  it('reads a stored row from before pools as one server with default health', () => {
    const { servers, policy } = resolveServers({ base_url: A, api_key_env: undefined }, {});
    expect(servers).toEqual([{ baseUrl: A, apiKey: null, missingKeyEnv: null, weight: 1 }]);
    expect(policy).toEqual({ failureThreshold: 3, cooldownMs: 10_000 });
  });
});
