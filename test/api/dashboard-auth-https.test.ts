/**
 * Dashboard cookies and origin checks of a production gateway behind an HTTPS proxy (issue 22; SPEC
 * Authentication 14, 16): the session cookie is `__Host-` and Secure, and with `dashboard.public_url` set,
 * only that origin may write.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, testConfig } from '../helpers/configs.js';
import { createDashboardUser, csrfOf, postForm } from '../helpers/dashboard-session.js';
import { expectError } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';

const PUBLIC = 'https://dashboard.example.test';
const viaProxy = { 'x-forwarded-proto': 'https' };
let sim: SimulatorProcess;
let gw: GatewayProcess;

beforeAll(async () => {
  sim = await startSimulatorProcess();
  gw = await startGatewayProcess({ ...testConfig(sim.url, makeKeys(), { server: { production: true, trust_proxy: true } }), dashboard: { public_url: PUBLIC } });
});

afterAll(async () => {
  await gw?.stop();
  await sim?.stop();
});

describe('dashboard over HTTPS', () => {
  it('names the session cookie __Host- and marks it Secure', async () => {
    const user = await createDashboardUser(gw.dbPath);
    const res = await postForm(`${gw.url}/dashboard/login`, { email: user.email, password: user.password }, undefined, viaProxy);
    expect(res.status).toBe(303);
    const line = res.headers.getSetCookie().find((c) => c.startsWith('__Host-switchboard_session=')) ?? '';
    expect(line.split('; ').slice(1).sort()).toEqual(['HttpOnly', 'Path=/', 'SameSite=Lax', 'Secure']);
    const cookie = line.split(';')[0] ?? '';
    const page = await fetch(`${gw.url}/dashboard/account`, { redirect: 'manual', headers: { cookie, ...viaProxy } });
    expect(page.status).toBe(200);
    // The cookie without the prefix is not the session.
    const plain = await fetch(`${gw.url}/dashboard/account`, { redirect: 'manual', headers: { cookie: cookie.replace('__Host-', ''), ...viaProxy } });
    expect(plain.status).toBe(303);

    const csrf = csrfOf(await page.text()) ?? '';
    const revoke = (origin: string) => postForm(`${gw.url}/dashboard/account/sessions/revoke`, { csrf_token: csrf, session: 'none' }, cookie, { ...viaProxy, origin });
    // The request's own Host is not the configured public origin: refused.
    const foreign = await revoke(gw.url);
    expectError({ status: foreign.status, headers: foreign.headers, body: await foreign.json() }, 403, 'csrf_token_invalid');
    expect((await revoke(PUBLIC)).status).toBe(404);
  });

  it('sends the sign-in page with the strict CSP and no framing', async () => {
    const res = await fetch(`${gw.url}/dashboard/login`, { headers: viaProxy });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
    expect(res.headers.get('x-frame-options')).toBe('DENY');
  });
});
