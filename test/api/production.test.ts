import { execFileSync } from 'node:child_process';
import { request } from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { call, expectError } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, tempDir, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';

let sim: SimulatorProcess;
let keys: TestKeys;
const gateways: GatewayProcess[] = [];

beforeAll(async () => {
  keys = makeKeys();
  sim = await startSimulatorProcess();
});

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
  await sim?.stop();
});

async function gateway(server: Record<string, unknown>): Promise<GatewayProcess> {
  const gw = await startGatewayProcess(testConfig(sim.url, keys, { server }));
  gateways.push(gw);
  return gw;
}

describe('server.production: true without TLS', () => {
  it('refuses plain HTTP with 403 https_required but still answers health probes', async () => {
    const gw = await gateway({ production: true });
    expectError(await call(`${gw.url}/${PROJECT}/v1/models`, { key: keys.full }), 403, 'https_required');
    expect((await call(`${gw.url}/healthz`)).status).toBe(200);
  });

  it('accepts requests a trusted front proxy received over HTTPS', async () => {
    const gw = await gateway({ production: true, trust_proxy: true });
    const url = `${gw.url}/${PROJECT}/v1/models`;
    expect((await call(url, { key: keys.full, headers: { 'x-forwarded-proto': 'https' } })).status).toBe(200);
    expectError(await call(url, { key: keys.full, headers: { 'x-forwarded-proto': 'http' } }), 403, 'https_required');
  });
});

describe('trust_proxy', () => {
  it('takes the client address from the right-most X-Forwarded-For entry for IP filters', async () => {
    const gw = await gateway({ trust_proxy: true });
    const url = `${gw.url}/${PROJECT}/v1/models`;
    expect((await call(url, { key: keys.ipDenied, headers: { 'x-forwarded-for': '192.0.2.1, 10.1.2.3' } })).status).toBe(200);
    expectError(await call(url, { key: keys.ipDenied, headers: { 'x-forwarded-for': '10.1.2.3, 192.0.2.1' } }), 403, 'ip_not_allowed');
  });
});

describe('TLS', () => {
  it('serves HTTPS through the uWS SSL app when tls is configured', async () => {
    const dir = tempDir();
    const cert_file = join(dir, 'cert.pem');
    const key_file = join(dir, 'key.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key_file, '-out', cert_file, '-days', '1', '-subj', '/CN=127.0.0.1'], { stdio: 'ignore' });
    const gw = await gateway({ production: true, tls: { cert_file, key_file } });
    expect(gw.url.startsWith('https://')).toBe(true);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${gw.url}/${PROJECT}/v1/models`, { rejectUnauthorized: false, headers: { authorization: `Bearer ${keys.full}` } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(200);
  });
});
