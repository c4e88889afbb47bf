/**
 * Issue 12, "Tests and figures": three gateway processes on one machine sharing one store and one Redis
 * (`coordination.redis_url`), as docs/deploy.md runs N replicas behind a load balancer; run on one SQLite
 * file by replicas.test.ts and on PostgreSQL by replicas-postgres.test.ts. The Redis is a private one
 * (test/helpers/redis-server.ts) so that it can be stopped and restarted mid-load.
 *
 * - 1,000 concurrent requests spread over the replicas against a limit of 100 admit exactly 100, in 20
 *   repeated runs (each run a fresh window: every replica's controllable clock moves two minutes on);
 * - a key revoked on replica A is refused on B and C within 1 s;
 * - a routing rule written on A routes on C;
 * - Redis restarted mid-load: no request fails while it is down (limits fail open, documented), /readyz
 *   says so, and once it is back the limit is exact across replicas again.
 */
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, SCRAPE_TOKEN_SERVER, testConfig, type TestKeys } from '../helpers/configs.js';
import { call } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, tempDir, type GatewayProcess, type SimulatorProcess, TEST_SCRAPE_TOKEN } from '../helpers/processes.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { makeRouterKeys, R_MATH, ROUTER_PROJECT, routerProject, type RouterKeys } from '../helpers/router-config.js';

/** SPEC Limits 2: base 67 + 50% burst (33) = a ceiling of 100 requests a minute. */
const BASE_PER_MINUTE = 67;
const CEILING = 100;

/**
 * Where the replicas keep their state: one SQLite file they all open (replicas on one host), or one
 * PostgreSQL database with a SQLite file of each replica's own (replicas on several hosts).
 */
export interface ReplicaStore {
  /** The config's `storage` (absent: the default, SQLite at --db). */
  readonly storage?: Record<string, unknown>;
  /** Replica i's --db. */
  dbPath(dir: string, i: number): string;
  readonly env?: NodeJS.ProcessEnv;
  close(): Promise<void>;
}

/** `bursts`: how many runs of 1,000 concurrent requests (issue 12 asks for 20; the suite on one SQLite file, which PostgreSQL's supersedes for several hosts, runs fewer to keep CI's machine light). */
export function replicaSuite(storeName: string, openStore: () => Promise<ReplicaStore>, bursts = 20): void {
  let store: ReplicaStore;
  let sim: SimulatorProcess;
  let redis: RedisServer;
  let keys: TestKeys;
  let routerKeys: RouterKeys;
  const replicas: GatewayProcess[] = [];
  // One connection per request: the 1,000 requests of a run arrive at once, as 1,000 clients would.
  const dispatcher = new Agent({ connections: null, pipelining: 0 });

  beforeAll(async () => {
    keys = makeKeys();
    routerKeys = makeRouterKeys();
    [sim, redis, store] = await Promise.all([startSimulatorProcess(), startRedisServer(), openStore()]);
    const dir = tempDir();
    const config = {
      ...testConfig(sim.url, keys, { server: SCRAPE_TOKEN_SERVER, rateLimit: { requests_per_minute: BASE_PER_MINUTE, tokens_per_minute: 0 }, extraProjects: [routerProject(sim.url, routerKeys)] }),
      // A generous command timeout: on a loaded machine a 250 ms one let replicas count locally (fail open)
      // while Redis was up, and this suite is about exactness while Redis answers.
      coordination: { redis_url: redis.url, key_prefix: `replicas-${process.pid}:`, command_timeout_ms: 2000 },
      ...(store.storage ? { storage: store.storage } : {}),
    };
    // One after the other: the first migrates the store, the others find it current.
    for (let i = 0; i < 3; i++) replicas.push(await startGatewayProcess(config, { dir, dbPath: store.dbPath(dir, i), ...(store.env ? { env: store.env } : {}) }));
  }, 120_000);

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await Promise.all([sim?.stop(), redis?.stop()]);
    await store?.close();
    await dispatcher.close();
  });

  /** Moves every replica's clock on by the same amount: the sliding windows of the last run are empty. */
  async function nextWindow(): Promise<void> {
    for (const r of replicas) {
      const res = await call(`${r.url}/__test/clock`, { body: { advance_ms: 120_000 } });
      expect(res.status).toBe(200);
    }
  }

  /** `n` concurrent keyed requests, round-robin over the replicas; the status codes counted. */
  async function burst(n: number): Promise<Record<number, number>> {
    const statuses = await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const target = replicas[i % replicas.length] as GatewayProcess;
        try {
          const res = await fetch(`${target.url}/${PROJECT}/v1/models`, { headers: { authorization: `Bearer ${keys.full}` }, dispatcher } as RequestInit);
          await res.arrayBuffer();
          return res.status;
        } catch {
          return 0;
        }
      }),
    );
    const counts: Record<number, number> = {};
    for (const s of statuses) counts[s] = (counts[s] ?? 0) + 1;
    return counts;
  }

  describe(`three replicas sharing Redis and ${storeName}`, () => {
    it(`admit exactly the limit of 1,000 concurrent requests spread over them, in ${bursts} runs`, { timeout: 240_000 }, async () => {
      const runs: Record<number, number>[] = [];
      for (let run = 0; run < bursts; run++) {
        await nextWindow();
        runs.push(await burst(1000));
      }
      expect(runs).toEqual(Array.from({ length: bursts }, () => ({ 200: CEILING, 429: 1000 - CEILING })));
    });

    it('refuse a key revoked on replica A on B and C within 1 s', async () => {
      const [a, b, c] = replicas as [GatewayProcess, GatewayProcess, GatewayProcess];
      await nextWindow();
      const created = await call(`${a.url}/${PROJECT}/v1/management/api-keys`, { key: keys.full, body: { scopes: ['inference'] } });
      expect(created.status).toBe(201);
      const { id, value } = created.body as { id: string; value: string };
      // Minted on A, usable on the others once they have heard of it (the same bus as a revocation).
      for (const r of [b, c]) await expectWithin(1000, async () => (await call(`${r.url}/${PROJECT}/v1/models`, { key: value })).status === 200);

      const revoked = await call(`${a.url}/${PROJECT}/v1/management/api-keys/${id}`, { method: 'DELETE', key: keys.full });
      expect(revoked.status).toBe(200);
      const refusedIn = await Promise.all([b, c].map((r) => expectWithin(1000, async () => (await call(`${r.url}/${PROJECT}/v1/models`, { key: value })).status === 401)));
      expect(refusedIn.every((ms) => ms <= 1000)).toBe(true);
    });

    it('route on C by a rule written on A', async () => {
      const [a, , c] = replicas as [GatewayProcess, GatewayProcess, GatewayProcess];
      await nextWindow();
      const ask = { model: 'client-model', messages: [{ role: 'user', content: 'plan a weekend trip to Lisbon' }] };
      const routed = (): Promise<{ status: number; headers: Headers }> => call(`${c.url}/${ROUTER_PROJECT}/_semantic/router/v1/chat/completions`, { key: routerKeys.full, body: ask });
      const before = await routed();
      expect(before.status).toBe(200);
      expect(before.headers.get('x-service-routed-endpoint')).toBe('chat');

      const rule = await call(`${a.url}/${ROUTER_PROJECT}/v1/management/semantic-router/rules`, { key: routerKeys.full, body: { name: 'lisbon to math', query_contains: ['LISBON'], endpoint_id: R_MATH } });
      expect(rule.status).toBe(201);
      try {
        await expectWithin(1000, async () => (await routed()).headers.get('x-service-routed-endpoint') === 'math');
      } finally {
        await call(`${a.url}/${ROUTER_PROJECT}/v1/management/semantic-router/rules/${(rule.body as { id: string }).id}`, { method: 'DELETE', key: routerKeys.full });
      }
    });

    it('keep serving while Redis restarts mid-load, and share the limit again once it is back', { timeout: 120_000 }, async () => {
      await nextWindow();
      // The load runs on the router project (1,024 a minute, ceiling 1,536): the test project's 100 would
      // refuse most of it, and a refusal is not what this test is about.
      let stop = false;
      const statuses: Record<number, number> = {};
      const load = async (i: number): Promise<void> => {
        const target = replicas[i % replicas.length] as GatewayProcess;
        while (!stop) {
          const res = await fetch(`${target.url}/${ROUTER_PROJECT}/math/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${routerKeys.full}`, 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'model-math', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
          });
          await res.arrayBuffer();
          statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        }
      };
      const workers = Array.from({ length: 6 }, (_, i) => load(i));
      await redis.stop();
      await expectWithin(5000, async () => {
        const ready = await call(`${(replicas[0] as GatewayProcess).url}/readyz`, { key: TEST_SCRAPE_TOKEN });
        return JSON.stringify(ready.body).includes('redis') && JSON.stringify(ready.body).match(/"redis"[^}]*"ok":false/) !== null;
      });
      await new Promise((r) => setTimeout(r, 300));
      await redis.restart();
      await expectWithin(10_000, async () => {
        const ready = await call(`${(replicas[0] as GatewayProcess).url}/readyz`, { key: TEST_SCRAPE_TOKEN });
        return JSON.stringify(ready.body).match(/"redis"[^}]*"ok":true/) !== null;
      });
      stop = true;
      await Promise.all(workers);
      expect(Object.keys(statuses)).toEqual(['200']);

      for (const r of replicas) await expectWithin(10_000, async () => JSON.stringify((await call(`${r.url}/readyz`, { key: TEST_SCRAPE_TOKEN })).body).match(/"redis"[^}]*"ok":true/) !== null);
      await nextWindow();
      expect(await burst(1000)).toEqual({ 200: CEILING, 429: 1000 - CEILING });
    });
  });

}

/** Polls `check` until it holds; resolves with the milliseconds it took, fails the test past `ms`. */
async function expectWithin(ms: number, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > ms) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
