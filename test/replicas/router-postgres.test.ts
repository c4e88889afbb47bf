/**
 * Issue 12: two gateway processes, each with its own SQLite file, sharing the router's state through one
 * PostgreSQL database and nothing else (no Redis, no bus): a routing rule written through A's management
 * API routes the next matching turn on B within 1 s (B's cache reloads on the change notice), and a turn
 * routed on B is listed, excerpt readable, by A's decisions route (B writes its decision rows to
 * PostgreSQL in batches; both share SWITCHBOARD_SECRET_KEY, as replicas must for the excerpts). Model
 * aliases and SLOs written on A are read on B the same way, and the routed turns B answered count in A's
 * 7-day usage (the ledger is PostgreSQL's).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, testConfig } from '../helpers/configs.js';
import { call } from '../helpers/http.js';
import { freshDatabase, requirePostgres, type TestDatabase } from '../helpers/postgres.js';
import { startReplica, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { makeRouterKeys, R_MATH, ROUTER_PROJECT, routerProject, type RouterKeys } from '../helpers/router-config.js';

let sim: SimulatorProcess;
let database: TestDatabase;
let routerKeys: RouterKeys;
let a: GatewayProcess;
let b: GatewayProcess;

beforeAll(async () => {
  await requirePostgres();
  routerKeys = makeRouterKeys();
  [sim, database] = await Promise.all([startSimulatorProcess(), freshDatabase()]);
  const config = {
    ...testConfig(sim.url, makeKeys(), { extraProjects: [routerProject(sim.url, routerKeys)] }),
    storage: { kind: 'postgres', url: database.url },
  };
  const env = { SWITCHBOARD_SECRET_KEY: randomBytes(32).toString('base64') };
  // One after the other: the first migrates the database, the second finds it current.
  a = await startReplica(config, 'a', env);
  b = await startReplica(config, 'b', env);
}, 120_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop(), sim?.stop()]);
  await database?.drop();
});

const routedOn = (replica: GatewayProcess, content: string) =>
  call(`${replica.url}/${ROUTER_PROJECT}/_semantic/router/v1/chat/completions`, { key: routerKeys.full, body: { model: 'client-model', messages: [{ role: 'user', content }] } });

describe('two replicas sharing the router state in PostgreSQL, without Redis', () => {
  it('routes the next matching turn on B within 1 s of a rule written through A', async () => {
    const ask = 'plan a weekend trip to Lisbon';
    const before = await routedOn(b, ask);
    expect(before.status).toBe(200);
    expect(before.headers.get('x-service-routed-endpoint')).toBe('chat');

    const rule = await call(`${a.url}/${ROUTER_PROJECT}/v1/management/semantic-router/rules`, {
      key: routerKeys.full,
      body: { name: 'lisbon to math', query_contains: ['LISBON'], endpoint_id: R_MATH },
    });
    expect(rule.status).toBe(201);
    try {
      await expect.poll(async () => (await routedOn(b, ask)).headers.get('x-service-routed-endpoint'), { timeout: 1000, interval: 20 }).toBe('math');
      const listed = await call(`${b.url}/${ROUTER_PROJECT}/v1/management/semantic-router/rules`, { key: routerKeys.full });
      expect((listed.body as { data: { id: string }[] }).data.map((r) => r.id)).toEqual([(rule.body as { id: string }).id]);
    } finally {
      await call(`${a.url}/${ROUTER_PROJECT}/v1/management/semantic-router/rules/${(rule.body as { id: string }).id}`, { method: 'DELETE', key: routerKeys.full });
    }
    await expect.poll(async () => (await routedOn(b, ask)).headers.get('x-service-routed-endpoint'), { timeout: 1000, interval: 20 }).toBe('chat');
  });

  it("lists a turn routed on B through A's decisions route, with its prompt excerpt", async () => {
    const routed = await routedOn(b, 'what does a weekend in Porto cost');
    expect(routed.status).toBe(200);
    const requestId = routed.headers.get('x-request-id');
    expect(requestId).toBeTruthy();
    const decisionOnA = async () => {
      const res = await call(`${a.url}/${ROUTER_PROJECT}/v1/management/semantic-router/decisions?limit=200`, { key: routerKeys.full });
      return (res.body as { data: Record<string, unknown>[] }).data.find((d) => d.decision_request_id === requestId) ?? null;
    };
    await expect.poll(decisionOnA, { timeout: 5000, interval: 50 }).not.toBeNull();
    const decision = await decisionOnA();
    expect(decision).toMatchObject({ route_reason: expect.any(String), endpoint_slug: routed.headers.get('x-service-routed-endpoint') });
    expect(decision?.query_preview).toContain('Porto');
  });

  it("counts turns routed on B in A's 7-day usage (the ledger is PostgreSQL's, not A's own file)", async () => {
    const routedOnReplica = async (replica: GatewayProcess) => {
      const res = await call(`${replica.url}/${ROUTER_PROJECT}/v1/management/semantic-router/config`, { key: routerKeys.full });
      return (res.body as { usage_7d: { routed_requests: number } }).usage_7d.routed_requests;
    };
    // A has routed nothing itself: every routed turn it counts was answered (and billed) on B.
    for (const ask of ['one more weekend in Porto', 'and one in Faro']) expect((await routedOn(b, ask)).status).toBe(200);
    await expect.poll(() => routedOnReplica(a), { timeout: 10_000, interval: 250 }).toBeGreaterThanOrEqual(2);
    // The same ledger read from either (polled: B's earlier turns may still be reaching it).
    await expect.poll(async () => (await routedOnReplica(a)) - (await routedOnReplica(b)), { timeout: 10_000, interval: 250 }).toBe(0);
  });

  it('resolves on B a model alias created on A, and lists on B an SLO stored on A', async () => {
    const alias = await call(`${a.url}/${ROUTER_PROJECT}/v1/models`, { key: routerKeys.full, body: { id: 'quick-math', target: 'model-math' } });
    expect(alias.status).toBe(201);
    const turnOnB = () =>
      call(`${b.url}/${ROUTER_PROJECT}/v1/chat/completions`, { key: routerKeys.full, body: { model: 'quick-math', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 } });
    await expect.poll(async () => (await turnOnB()).status, { timeout: 1000, interval: 20 }).toBe(200);

    const slo = await call(`${a.url}/${ROUTER_PROJECT}/v1/slos`, { key: routerKeys.full, body: { endpoint: 'math', ttft_ms: 250 } });
    expect(slo.status).toBe(201);
    const slosOnB = async () => ((await call(`${b.url}/${ROUTER_PROJECT}/v1/slos`, { key: routerKeys.full })).body as { data: { endpoint_slug: string; ttft_ms: number }[] }).data;
    await expect.poll(slosOnB, { timeout: 1000, interval: 20 }).toEqual([expect.objectContaining({ endpoint_slug: 'math', ttft_ms: 250 })]);
  });
});
