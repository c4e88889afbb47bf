/**
 * Issue 12, "Outages": PostgreSQL stopped under load. Two replicas on a private PostgreSQL cluster
 * (test/helpers/postgres-server.ts, so the machine's shared server is never touched), each with a SQLite
 * file of its own. While PostgreSQL is down:
 * - chat turns keep being answered: the request path reads keys, projects and routes from memory and
 *   writes its usage rows through the instance's journal, never waiting on PostgreSQL;
 * - /readyz stays 200 and lists `{"name":"postgres","ok":false}` under `dependencies` (every replica shares
 *   PostgreSQL: taking one out of the load balancer would not bring it back);
 * - a management write that needs PostgreSQL answers 503 `store_unavailable`, retryable;
 * and once it is back, nothing is lost: every turn answered during the outage is in the shared ledger.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, SCRAPE_TOKEN_SERVER, testConfig, type TestKeys } from '../helpers/configs.js';
import { call } from '../helpers/http.js';
import { PG_GATEWAY_ENV } from '../helpers/postgres.js';
import { startPostgresServer, type PostgresServer } from '../helpers/postgres-server.js';
import { startGatewayProcess, startSimulatorProcess, tempDir, type GatewayProcess, type SimulatorProcess, TEST_SCRAPE_TOKEN } from '../helpers/processes.js';

let postgres: PostgresServer;
let sim: SimulatorProcess;
let keys: TestKeys;
const replicas: GatewayProcess[] = [];

beforeAll(async () => {
  keys = makeKeys();
  [postgres, sim] = await Promise.all([startPostgresServer(), startSimulatorProcess()]);
  const dir = tempDir();
  const config = { ...testConfig(sim.url, keys, { server: SCRAPE_TOKEN_SERVER }), storage: { kind: 'postgres', url: postgres.url } };
  for (let i = 0; i < 2; i++) replicas.push(await startGatewayProcess(config, { dir, dbPath: `${dir}/replica-${i}.db`, env: PG_GATEWAY_ENV }));
}, 120_000);

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop()));
  await sim?.stop();
  await postgres?.destroy();
});

const postgresOk = async (r: GatewayProcess): Promise<boolean | null> => {
  const res = await call(`${r.url}/readyz`, { key: TEST_SCRAPE_TOKEN });
  const deps = (res.body as { dependencies?: { name: string; ok: boolean }[] }).dependencies ?? [];
  return deps.find((d) => d.name === 'postgres')?.ok ?? null;
};

/** The usage rows PostgreSQL holds, read directly (for a failure's message). */
async function storedRows(): Promise<string> {
  const client = new pg.Client({ connectionString: postgres.url });
  try {
    await client.connect();
    return String((await client.query<{ n: string }>('SELECT count(*) AS n FROM usage_events')).rows[0]?.n);
  } catch (err) {
    return `unreadable (${err instanceof Error ? err.message : String(err)})`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

const turn = (r: GatewayProcess): Promise<{ status: number }> =>
  call(`${r.url}/${PROJECT}/chat/v1/chat/completions`, { key: keys.full, body: { model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 } });

describe('PostgreSQL down under load', () => {
  it('keeps answering turns, says so on /readyz, refuses store writes with 503 store_unavailable, and loses no usage row', { timeout: 120_000 }, async () => {
    for (const r of replicas) expect(await postgresOk(r)).toBe(true);
    let stop = false;
    const statuses: Record<number, number> = {};
    const load = async (i: number): Promise<void> => {
      const target = replicas[i % replicas.length] as GatewayProcess;
      while (!stop) {
        // A refused connection counts as status 0: the test then fails on it, not on an unhandled rejection.
        const status = await turn(target).then((r) => r.status, () => 0);
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
    };
    const workers = Array.from({ length: 4 }, (_, i) => load(i));
    try {
      await outageUnderLoad(statuses);
    } finally {
      stop = true;
      await Promise.all(workers);
    }
    expect(Object.keys(statuses)).toEqual(['200']);

    // Every answered turn reaches the shared ledger once PostgreSQL is back (journal, then batched writes).
    const answered = statuses[200] ?? 0;
    await expect.poll(storedRows, { timeout: 30_000, interval: 250 }).toBe(String(answered));
    const counted = await call(`${(replicas[0] as GatewayProcess).url}/${PROJECT}/v1/management/usage?group_by=endpoint`, { key: keys.full });
    expect(((counted.body as { data?: { requests: number }[] }).data ?? []).reduce((sum, row) => sum + row.requests, 0)).toBe(answered);

    const created = await call(`${(replicas[1] as GatewayProcess).url}/${PROJECT}/v1/management/api-keys`, { key: keys.full, body: { scopes: ['inference'] } });
    expect(created.status).toBe(201);
  });
});

/** With turns being answered: PostgreSQL stopped, what the replicas say and do, PostgreSQL back. */
async function outageUnderLoad(statuses: Record<number, number>): Promise<void> {
  await expect.poll(() => statuses[200] ?? 0, { timeout: 20_000 }).toBeGreaterThan(20);

  await postgres.stop();
  for (const r of replicas) await expect.poll(() => postgresOk(r), { timeout: 10_000 }).toBe(false);
  const during = statuses[200] ?? 0;
  await expect.poll(() => (statuses[200] ?? 0) - during, { timeout: 20_000 }).toBeGreaterThan(20);
  const ready = await call(`${(replicas[0] as GatewayProcess).url}/readyz`);
  expect(ready.status).toBe(200);

  const refused = await call(`${(replicas[1] as GatewayProcess).url}/${PROJECT}/v1/management/api-keys`, { key: keys.full, body: { scopes: ['inference'] } });
  expect(refused.status).toBe(503);
  expect(refused.body).toEqual({ error: expect.objectContaining({ code: 'store_unavailable', type: 'server_error', param: null }) });

  await postgres.restart();
  for (const r of replicas) await expect.poll(() => postgresOk(r), { timeout: 15_000 }).toBe(true);
}
