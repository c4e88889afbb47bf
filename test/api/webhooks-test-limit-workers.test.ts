/**
 * SPEC Limits: 10 test deliveries per webhook per hour, for the deployment ("one deployment, one truth";
 * docs/deploy.md: limits stay exact across workers, with no external service). Found from outside: the
 * count was a Map in each thread, so `serve --workers 2` let 20 tests of one webhook through in an hour.
 * Here 15 concurrent tests go through one connection on each worker: exactly 10 are sent.
 */
import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/processes.js';
import { callOn, createWebhook, expectTenSent, testBurst } from '../helpers/webhook-test-burst.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

let gw: GatewayProcess;
let keys: TestKeys;
let receiver: Receiver;
const clients: Client[] = [];

beforeAll(async () => {
  keys = makeKeys();
  receiver = await startReceiver();
  // No model is called: the upstream is never reached. Webhook routes are control plane (raised above 16).
  const config = testConfig('http://127.0.0.1:9/v1', keys, {
    security: { allow_private_targets: true, allow_http_targets: true },
    limits: { management_requests_per_minute: 100_000 },
  });
  gw = await startGatewayProcess(config, { extraArgs: ['--workers', '2'] });
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await gw?.stop();
  await receiver?.close();
});

/**
 * One connection answered by each worker: new connections until both workers have one (the kernel
 * spreads connections over the two listeners; a connection stays on the worker that accepted it).
 */
async function connectionPerWorker(webhookId: string): Promise<Client[]> {
  const byWorker = new Map<string, Client>();
  for (let tries = 0; byWorker.size < 2; tries++) {
    if (tries === 200) throw new Error('200 connections all landed on one worker');
    const client = new Client(gw.url, { keepAliveTimeout: 60_000, keepAliveMaxTimeout: 60_000 });
    clients.push(client);
    const probe = await callOn(client, `/${PROJECT}/v1/webhooks/${webhookId}`, keys.full, 'GET');
    expect(probe.status).toBe(200);
    const worker = probe.headers.get('x-service-worker-id') ?? '';
    if (!byWorker.has(worker)) byWorker.set(worker, client);
  }
  return [...byWorker.values()];
}

describe('serve --workers 2: webhook test deliveries', () => {
  it('sends exactly 10 of 15 tests of one webhook spread over both workers, refusing the rest with 429 webhook_test_limit_exceeded', async () => {
    const setup = new Client(gw.url);
    clients.push(setup);
    const webhookId = await createWebhook(setup, keys.full, receiver.url);
    const perWorker = await connectionPerWorker(webhookId);

    const answers = await testBurst(perWorker, keys.full, webhookId);
    // Both workers answered (each connection stayed on its own), and between them they sent 10.
    expect(new Set(answers.map((a) => a.worker)).size).toBe(2);
    expectTenSent(answers);
    expect(receiver.received).toHaveLength(10);
  });
});
