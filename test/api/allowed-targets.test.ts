/**
 * `security.allowed_targets`: webhook receivers on an internal network. A gateway that lists `localhost`
 * and 10.0.0.0/8 (and nothing else relaxed: https only, allow_private_targets off) accepts webhooks to
 * those targets and delivers to them (the connect-time guard admits them too), while every other private
 * target stays refused with 400 url_not_allowed, including 127.0.0.1, the very address `localhost`
 * reaches: a host entry names the URL's host, not its addresses.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../src/webhooks-verify.js';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { call, expectError } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, tempDir, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { makeSelfSignedCert, startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

let sim: SimulatorProcess;
let gw: GatewayProcess;
let receiver: Receiver;
let keys: TestKeys;

beforeAll(async () => {
  const dir = tempDir();
  const cert = makeSelfSignedCert(dir);
  receiver = await startReceiver({ tls: cert });
  keys = makeKeys();
  sim = await startSimulatorProcess();
  gw = await startGatewayProcess(
    { ...testConfig(sim.url, keys), security: { allowed_targets: ['localhost', '10.0.0.0/8'] } },
    { dir, dbPath: join(dir, 'targets.db'), env: { NODE_EXTRA_CA_CERTS: cert.certFile } },
  );
});

afterAll(async () => {
  await gw?.stop();
  await sim?.stop();
  await receiver?.close();
});

const hooks = (): string => `${gw.url}/${PROJECT}/v1/webhooks`;
const create = (url: string) => call(hooks(), { key: keys.full, body: { url, events: ['exec.completed'] } });
const port = (): string => new URL(receiver.url).port;

describe('webhooks to targets listed in security.allowed_targets', () => {
  it('accepts a listed private host name and delivers a signed test event to it', async () => {
    const created = await create(`https://localhost:${port()}/hooks`);
    expect(created.status).toBe(201);
    const w = created.body as { id: string; secret: string };
    const test = await call(`${hooks()}/${w.id}/test`, { key: keys.full, method: 'POST' });
    expect(test.body).toMatchObject({ success: true, http_status: 200 });
    const [got] = await receiver.waitFor(1);
    expect(verifyWebhook(w.secret, got?.rawBody ?? '', got?.headers ?? {}).ok).toBe(true);
  });

  it('accepts an address inside a listed CIDR range', async () => {
    expect((await create('https://10.20.30.40/hooks')).status).toBe(201);
  });

  it.each([
    ['the loopback address the listed name resolves to', 'https://127.0.0.1:PORT/hooks', 'a loopback address'],
    ['an unlisted private address', 'https://192.168.1.5/hooks', 'a private address'],
    ['another private range', 'https://172.16.0.1/hooks', 'a private address'],
    ['the cloud metadata service', 'https://169.254.169.254/latest/meta-data/', 'a link-local address'],
  ])('refuses %s with 400 url_not_allowed', async (_what, url, why) => {
    const res = await create(url.replace('PORT', port()));
    expectError(res, 400, 'url_not_allowed', 'url');
    expect((res.body as { error: { message: string } }).error.message).toContain(why);
  });

  it('refuses moving a webhook onto an unlisted private target', async () => {
    const w = (await create(`https://localhost:${port()}/hooks`)).body as { id: string };
    const moved = await call(`${hooks()}/${w.id}`, { key: keys.full, method: 'PUT', body: { url: 'https://192.168.1.5/hooks' } });
    expectError(moved, 400, 'url_not_allowed', 'url');
  });
});
