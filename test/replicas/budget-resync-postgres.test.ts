/**
 * "One truth across replicas" for budget spend (docs/decisions.md "Budget spend follows the ledger").
 * Found from outside: with Redis down, A's budget charges never reached B (pub/sub is at most once); once
 * Redis was back B still counted less than the shared ledger held, for the rest of the window, and admitted
 * turns past the cap (6,446 tokens in the ledger against a cap of 6,000). Now a replica raises its spend
 * to the ledger's when its bus subscriber is back, and every few seconds whatever the bus does.
 *
 * Three replicas on one PostgreSQL reach Redis through a TCP proxy (test/contract/redis-proxy.ts):
 * stopping it loses every charge published meanwhile. A and B resync only on the bus's reconnect (a
 * period of 10 minutes); C has a period of 300 ms and no bus to help it while Redis is down.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { call } from '../helpers/http.js';
import { freshDatabase, PG_GATEWAY_ENV, requirePostgres, type TestDatabase } from '../helpers/postgres.js';
import { startReplica, startSimulatorProcess, tempDir, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { startRedisProxy, type RedisProxy } from '../contract/redis-proxy.js';

/** Tokens of one simulated turn of `chatOn` (test/replicas/usage-postgres.test.ts: 105 for 5). */
const TURN = 21;

let sim: SimulatorProcess;
let database: TestDatabase;
let proxy: RedisProxy;
let keys: TestKeys;
let a: GatewayProcess;
let b: GatewayProcess;
let c: GatewayProcess;

beforeAll(async () => {
  await requirePostgres();
  keys = makeKeys();
  [sim, database, proxy] = await Promise.all([startSimulatorProcess(), freshDatabase(), startRedisProxy()]);
  const config = {
    ...testConfig(sim.url, keys, { rateLimit: { requests_per_minute: 10_000, tokens_per_minute: 0 } }),
    coordination: { redis_url: proxy.url, key_prefix: `budget-resync-${process.pid}-${Date.now()}:`, on_outage: 'fail_open' },
    storage: { kind: 'postgres', url: database.url },
    pool: { min_threads: 1, max_threads: 1 },
  };
  const dir = tempDir();
  const onReconnectOnly = { ...PG_GATEWAY_ENV, SWITCHBOARD_BUDGET_RESYNC_MS: '600000' };
  // The first migrates the database; the others find it current.
  a = await startReplica(config, 'a', onReconnectOnly, dir);
  [b, c] = await Promise.all([startReplica(config, 'b', onReconnectOnly, dir), startReplica(config, 'c', { ...PG_GATEWAY_ENV, SWITCHBOARD_BUDGET_RESYNC_MS: '300' }, dir)]);
}, 120_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop(), c?.stop(), sim?.stop()]);
  await proxy?.stop();
  await database?.drop();
});

const chatOn = async (replica: GatewayProcess): Promise<{ status: number; code: unknown }> => {
  const res = await call(`${replica.url}/${PROJECT}/chat/v1/chat/completions`, { key: keys.full, body: { model: 'client-model', messages: [{ role: 'user', content: 'hello' }] } });
  return { status: res.status, code: (res.body as { error?: { code?: string } }).error?.code };
};

/** The ledger's turns and tokens for the endpoint (PostgreSQL, whichever replica answers). */
const ledgerOn = async (replica: GatewayProcess): Promise<{ endpoint_id: string; requests: number; total_tokens: number }> => {
  const res = await call(`${replica.url}/${PROJECT}/v1/management/usage?group_by=endpoint`, { key: keys.full });
  expect(res.status).toBe(200);
  const data = (res.body as { data: { endpoint_id: string; requests: number; total_tokens: number }[] }).data;
  return data[0] ?? { endpoint_id: '', requests: 0, total_tokens: 0 };
};

const spentOn = async (replica: GatewayProcess, endpointId: string): Promise<{ cap: number | null; hourly: number; total: number }> => {
  const res = await call(`${replica.url}/${PROJECT}/v1/management/budgets/endpoints/${endpointId}`, { key: keys.full });
  expect(res.status).toBe(200);
  const body = res.body as { hourly_tokens: number | null; spent: { hourly_tokens: number; total_tokens: number } };
  return { cap: body.hourly_tokens, hourly: body.spent.hourly_tokens, total: body.spent.total_tokens };
};

describe('budget spend across replicas when the bus loses charges', () => {
  it('raises B to the ledger once its subscriber is back, so B refuses at the cap; C catches up while Redis is down', async () => {
    expect((await chatOn(a)).status).toBe(200);
    await expect.poll(async () => (await ledgerOn(a)).requests, { timeout: 5000, interval: 50 }).toBe(1);
    const { endpoint_id: endpointId, total_tokens: first } = await ledgerOn(a);
    expect(first).toBe(TURN);
    // A cap of 8 turns; 1 spent, seen by every replica over the bus.
    const cap = 8 * TURN;
    const put = await call(`${a.url}/${PROJECT}/v1/management/budgets/endpoints/${endpointId}`, { method: 'PUT', key: keys.full, body: { hourly_tokens: cap } });
    expect(put.status).toBe(200);
    for (const r of [b, c]) await expect.poll(() => spentOn(r, endpointId), { timeout: 5000, interval: 50 }).toEqual({ cap, hourly: TURN, total: TURN });

    await proxy.stop();
    // Six turns on A whose charges nobody hears: 7 turns in the ledger, one short of the cap.
    for (let i = 0; i < 6; i += 1) expect((await chatOn(a)).status).toBe(200);
    await expect.poll(async () => (await ledgerOn(b)).total_tokens, { timeout: 5000, interval: 50 }).toBe(7 * TURN);
    expect(await spentOn(a, endpointId)).toEqual({ cap, hourly: 7 * TURN, total: 7 * TURN });
    // C reads the ledger every 300 ms: healed while Redis is still down.
    await expect.poll(() => spentOn(c, endpointId), { timeout: 3000, interval: 50 }).toEqual({ cap, hourly: 7 * TURN, total: 7 * TURN });
    // B has heard nothing yet (its period is 10 minutes).
    expect(await spentOn(b, endpointId)).toEqual({ cap, hourly: TURN, total: TURN });

    await proxy.start();
    // B's subscriber reconnects (backoff of at most a few seconds), then B reads the ledger.
    await expect.poll(() => spentOn(b, endpointId), { timeout: 15_000, interval: 100 }).toEqual({ cap, hourly: 7 * TURN, total: 7 * TURN });
    // One turn left under the cap: B admits it, then refuses, as A does.
    expect(await chatOn(b)).toEqual({ status: 200, code: undefined });
    await expect.poll(() => chatOn(b), { timeout: 2000, interval: 50 }).toEqual({ status: 429, code: 'endpoint_budget_exhausted' });
    await expect.poll(() => chatOn(a), { timeout: 2000, interval: 50 }).toEqual({ status: 429, code: 'endpoint_budget_exhausted' });
    await expect.poll(async () => (await ledgerOn(a)).total_tokens, { timeout: 5000, interval: 50 }).toBe(cap);
  }, 60_000);
});
