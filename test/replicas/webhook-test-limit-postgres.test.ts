/**
 * SPEC Limits: 10 test deliveries per webhook per hour, for the deployment ("one deployment, one truth").
 * Found from outside: the count was a Map in each process, so 3 replicas let 30 tests of one webhook
 * through in an hour. Here two replicas share one PostgreSQL database and the machine's Redis (a key prefix
 * of their own), and 15 concurrent tests of one webhook go half to each: exactly 10 are sent.
 */
import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_URL, freshPrefix, requireRedis } from '../contract/redis-required.js';
import { makeKeys, testConfig, type TestKeys } from '../helpers/configs.js';
import { freshDatabase, PG_GATEWAY_ENV, requirePostgres, type TestDatabase } from '../helpers/postgres.js';
import { startGatewayProcess, tempDir, type GatewayProcess } from '../helpers/processes.js';
import { createWebhook, expectTenSent, testBurst } from '../helpers/webhook-test-burst.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

let db: TestDatabase;
let keys: TestKeys;
let receiver: Receiver;
const replicas: GatewayProcess[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  await Promise.all([requirePostgres(), requireRedis()]);
  keys = makeKeys();
  [db, receiver] = await Promise.all([freshDatabase(), startReceiver()]);
  const dir = tempDir();
  const config = {
    // No model is called: the upstream is never reached. Webhook routes are control plane (raised above 16).
    ...testConfig('http://127.0.0.1:9/v1', keys, {
      security: { allow_private_targets: true, allow_http_targets: true },
      limits: { management_requests_per_minute: 100_000 },
    }),
    // A generous command timeout: on a loaded machine a short one makes a replica count on its own
    // (fail_open) while Redis is up, and this test is about the count while Redis answers.
    coordination: { redis_url: REDIS_URL, key_prefix: freshPrefix(), command_timeout_ms: 5000 },
    storage: { kind: 'postgres', url: db.url },
  };
  // The first migrates the database; the second finds it current.
  for (const name of ['a', 'b']) replicas.push(await startGatewayProcess(config, { dir, dbPath: `${dir}/${name}.db`, env: PG_GATEWAY_ENV }));
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(replicas.map((r) => r.stop()));
  await receiver?.close();
  await db?.drop();
});

describe('two replicas sharing PostgreSQL and Redis: webhook test deliveries', () => {
  it('send exactly 10 of 15 tests of one webhook spread over both, refusing the rest with 429 webhook_test_limit_exceeded', async () => {
    clients.push(...replicas.map((r) => new Client(r.url)));
    const [a, b] = clients as [Client, Client];
    const webhookId = await createWebhook(a, keys.full, receiver.url);

    const answers = await testBurst([a, b], keys.full, webhookId);
    expectTenSent(answers);
    // Both replicas sent some: the limit is theirs together, not the first one's.
    expect(new Set(answers.filter((x) => x.res.status === 200).map((x) => x.worker)).size).toBe(2);
    expect(receiver.received).toHaveLength(10);
  });
});
