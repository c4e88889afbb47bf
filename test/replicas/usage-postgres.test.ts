/**
 * Issue 12: two gateway processes, each with its own SQLite file, sharing the usage ledger and the budget
 * caps through one PostgreSQL database (no Redis, no bus). Chat turns answered on both are billed in one
 * ledger: the management usage API on either replica shows their sum. A budget cap set on A is stored in
 * PostgreSQL: B reloads it on the change notice, and after a restart B enforces it with the spend of both
 * replicas, rebuilt from the hourly rollup.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { call } from '../helpers/http.js';
import { freshDatabase, PG_GATEWAY_ENV, requirePostgres, type TestDatabase } from '../helpers/postgres.js';
import { startReplica, startSimulatorProcess, tempDir, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';

let sim: SimulatorProcess;
let database: TestDatabase;
let keys: TestKeys;
let config: Record<string, unknown>;
let dirB: string;
let a: GatewayProcess;
let b: GatewayProcess;

beforeAll(async () => {
  await requirePostgres();
  keys = makeKeys();
  [sim, database] = await Promise.all([startSimulatorProcess(), freshDatabase()]);
  config = { ...testConfig(sim.url, keys), storage: { kind: 'postgres', url: database.url }, pool: { min_threads: 1, max_threads: 1 } };
  dirB = tempDir();
  a = await startReplica(config, 'a', PG_GATEWAY_ENV);
  b = await startReplica(config, 'b', PG_GATEWAY_ENV, dirB);
}, 120_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop(), sim?.stop()]);
  await database?.drop();
});

const chatOn = async (replica: GatewayProcess): Promise<{ status: number; code: unknown }> => {
  const res = await call(`${replica.url}/${PROJECT}/chat/v1/chat/completions`, { key: keys.full, body: { model: 'client-model', messages: [{ role: 'user', content: 'hello' }] } });
  return { status: res.status, code: (res.body as { error?: { code?: string } }).error?.code };
};

interface UsageResult {
  endpoint_id?: string;
  requests: number;
  total_tokens: number;
}
const usageOn = async (replica: GatewayProcess, groupBy: 'day' | 'endpoint'): Promise<UsageResult[]> => {
  const res = await call(`${replica.url}/${PROJECT}/v1/management/usage?group_by=${groupBy}`, { key: keys.full });
  expect(res.status).toBe(200);
  return (res.body as { data: UsageResult[] }).data;
};
const sum = (items: UsageResult[], pick: (r: UsageResult) => number): number => items.reduce((n, r) => n + pick(r), 0);

interface BudgetWire {
  hourly_tokens: number | null;
  source: string;
  spent: { total_tokens: number };
}
const budgetOn = async (replica: GatewayProcess, endpointId: string): Promise<BudgetWire> => {
  const res = await call(`${replica.url}/${PROJECT}/v1/management/budgets/endpoints/${endpointId}`, { key: keys.full });
  expect(res.status).toBe(200);
  return res.body as BudgetWire;
};

describe('two replicas sharing the usage ledger and budgets in PostgreSQL', () => {
  let endpointId = '';
  let tokens = 0;

  it('shows the turns answered on both replicas in the usage API of either', async () => {
    for (const replica of [a, a, a, b, b]) expect((await chatOn(replica)).status).toBe(200);
    for (const replica of [a, b]) await expect.poll(async () => sum(await usageOn(replica, 'day'), (r) => r.requests), { timeout: 5000, interval: 50 }).toBe(5);
    const byEndpoint = await usageOn(b, 'endpoint');
    expect(byEndpoint).toHaveLength(1);
    endpointId = byEndpoint[0]?.endpoint_id ?? '';
    tokens = byEndpoint[0]?.total_tokens ?? 0;
    expect(tokens).toBe(105);
    expect(await usageOn(a, 'endpoint')).toEqual(byEndpoint);
  });

  it('enforces a budget set on A on B, after B restarts, with the spend of both replicas', async () => {
    const put = await call(`${a.url}/${PROJECT}/v1/management/budgets/endpoints/${endpointId}`, { method: 'PUT', key: keys.full, body: { hourly_tokens: 1 } });
    expect(put.status).toBe(200);
    expect(await chatOn(a)).toEqual({ status: 429, code: 'endpoint_budget_exhausted' });
    // B reloads the stored caps on PostgreSQL's change notice, without a restart.
    await expect.poll(async () => (await budgetOn(b, endpointId)).hourly_tokens, { timeout: 2000, interval: 20 }).toBe(1);

    await b.stop();
    b = await startReplica(config, 'b', PG_GATEWAY_ENV, dirB);
    const restored = await budgetOn(b, endpointId);
    expect(restored).toMatchObject({ hourly_tokens: 1, source: 'api' });
    // Spend rebuilt from PostgreSQL's rollup: A's three turns as well as B's own two.
    expect(restored.spent.total_tokens).toBe(tokens);
    expect(await chatOn(b)).toEqual({ status: 429, code: 'endpoint_budget_exhausted' });
  }, 60_000);
});
