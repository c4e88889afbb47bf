/**
 * Sign-in in a real browser (headless Chromium through playwright-core, issue 22): password then TOTP
 * (enrolled on the account page from its QR code's key), and connecting an identity provider (a real
 * oidc-provider in this process) then signing in through it. Under the real CSP: the connect form's
 * redirect to the provider must be allowed by form-action. Screenshots go to test-artifacts/.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { generateSync } from 'otplib';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, testConfig } from '../helpers/configs.js';
import { createDashboardUser, type DashboardUser } from '../helpers/dashboard-session.js';
import { advanceClock } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { freshPage, launchChromium, screenshot } from './chromium.js';

let idpServer: Server;
let sim: SimulatorProcess;
let gw: GatewayProcess;
let browser: Browser | null = null;
let offsetMs = 0;

beforeAll(async () => {
  idpServer = createServer();
  await new Promise<void>((resolve) => idpServer.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(idpServer.address() as AddressInfo).port}`;
  sim = await startSimulatorProcess();
  const provider = { id: 'corp', name: 'Corp SSO', issuer, client_id: 'switchboard', client_secret: 'browser-test-secret', allow_insecure_issuer: true };
  gw = await startGatewayProcess({ ...testConfig(sim.url, makeKeys()), dashboard: { oidc_providers: [provider] } });
  const oidc = new Provider(issuer, {
    clients: [{ client_id: 'switchboard', client_secret: 'browser-test-secret', redirect_uris: [`${gw.url}/auth/corp/callback`], token_endpoint_auth_method: 'client_secret_post' }],
    cookies: { keys: ['a-test-only-cookie-signing-key'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    findAccount: (_ctx: unknown, sub: string) => ({ accountId: sub, claims: () => ({ sub, email: `${sub}@example.test`, email_verified: true, name: sub }) }),
  });
  idpServer.on('request', oidc.callback());
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await gw?.stop();
  await sim?.stop();
  await new Promise((resolve) => idpServer?.close(resolve));
});

/** A code of a time step the gateway has not seen yet (its clock moved 30 s). */
async function freshCode(secret: string): Promise<string> {
  offsetMs = (await advanceClock(gw.url, 30_000)) - Date.now();
  return generateSync({ secret, epoch: Math.floor((Date.now() + offsetMs) / 1000) });
}

async function passwordSignIn(page: Page, user: DashboardUser, landing: string): Promise<void> {
  await page.goto(`${gw.url}/dashboard/account`);
  expect(new URL(page.url()).pathname).toBe('/dashboard/login');
  await page.fill('input[name="email"]', user.email);
  await page.fill('input[name="password"]', user.password);
  await Promise.all([page.waitForURL(`**${landing}`), page.click('form[action="/dashboard/login"] button[type="submit"]')]);
}

/** The identity provider's development login and consent forms, until the browser is back at the gateway. */
async function throughIdp(page: Page, login: string): Promise<void> {
  for (let i = 0; i < 5 && !page.url().startsWith(gw.url); i++) {
    if (await page.locator('input[name="login"]').count()) {
      await page.fill('input[name="login"]', login);
      await page.fill('input[name="password"]', 'any');
    }
    await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
  }
  expect(page.url().startsWith(gw.url)).toBe(true);
}

describe('dashboard sign-in in a browser', () => {
  it('turns on two-factor from the QR code page, then signs in with password and TOTP code', async () => {
    if (!browser) throw new Error('Chromium did not start');
    const user = await createDashboardUser(gw.dbPath, { email: 'browser-2fa@example.test' });
    const { context, page } = await freshPage(browser);
    await passwordSignIn(page, user, '/dashboard/account');
    await page.click('a[href="/dashboard/account/totp/setup"]');
    expect(await page.locator('.qr svg').count()).toBe(1);
    await screenshot(page, 'dashboard-signin-totp-setup');
    const secret = (await page.textContent('code.totp-secret'))?.trim() ?? '';
    await page.fill('input[name="code"]', await freshCode(secret));
    await Promise.all([page.waitForURL('**/dashboard/account/totp/enable'), page.click('form[action="/dashboard/account/totp/enable"] button')]);
    expect(await page.locator('ul.backup-codes li').count()).toBe(10);
    await screenshot(page, 'dashboard-signin-backup-codes');

    await Promise.all([page.waitForURL('**/dashboard/login?signed_out=1'), page.click('nav.who button')]);
    await passwordSignIn(page, user, '/dashboard/login/totp');
    await screenshot(page, 'dashboard-signin-totp-step');
    await page.fill('input[name="code"]', await freshCode(secret));
    await Promise.all([page.waitForURL('**/dashboard/account'), page.click('form[action="/dashboard/login/totp"] button')]);
    expect(await page.textContent('#two-factor')).toContain('Two-factor sign-in is on');
    await screenshot(page, 'dashboard-signin-signed-in');
    await context.close();
  });

  it('connects an identity provider on the account page, then signs in through it', async () => {
    if (!browser) throw new Error('Chromium did not start');
    const user = await createDashboardUser(gw.dbPath, { email: 'dana@example.test' });
    const first = await freshPage(browser);
    await passwordSignIn(first.page, user, '/dashboard/account');
    await first.page.click('form[action="/dashboard/account/identities/corp/connect"] button');
    await first.page.waitForURL((u) => !u.href.startsWith(gw.url));
    await throughIdp(first.page, 'dana');
    expect(await first.page.textContent('#providers')).toContain('Corp SSO: connected as dana@example.test');
    await screenshot(first.page, 'dashboard-signin-provider-connected');
    await first.context.close();

    const second = await freshPage(browser);
    await second.page.goto(`${gw.url}/dashboard/login`);
    await second.page.click('a:has-text("Sign in with Corp SSO")');
    await throughIdp(second.page, 'dana');
    expect(new URL(second.page.url()).pathname).toBe('/dashboard/projects');
    await second.page.goto(`${gw.url}/dashboard/account`);
    expect(await second.page.textContent('main')).toContain(user.id);
    await screenshot(second.page, 'dashboard-signin-through-provider');
    await second.context.close();
  });
});
