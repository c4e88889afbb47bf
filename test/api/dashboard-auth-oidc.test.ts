/**
 * OpenID Connect sign-in (issue 22; SPEC "Dashboard authentication routes", Authentication 12) against a
 * real identity provider, `oidc-provider`, running in this test process on plain HTTP (the gateway's config
 * allows that provider an http issuer). Its development login form is driven over HTTP like a browser.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Database from 'better-sqlite3';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, testConfig } from '../helpers/configs.js';
import { createDashboardUser, dashboardSession, getPage, postForm, sessionCookieOf, signIn } from '../helpers/dashboard-session.js';
import { advanceClock } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';

let idpServer: Server;
let issuer = '';
let sim: SimulatorProcess;
let gw: GatewayProcess;
const url = (path: string): string => `${gw.url}${path}`;

beforeAll(async () => {
  idpServer = createServer();
  await new Promise<void>((resolve) => idpServer.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(idpServer.address() as AddressInfo).port}`;
  sim = await startSimulatorProcess();
  const provider = (id: string, extra: Record<string, unknown> = {}) => ({ id, name: `IdP ${id}`, issuer, client_id: `switchboard-${id}`, client_secret: `secret-${id}`, allow_insecure_issuer: true, ...extra });
  gw = await startGatewayProcess({ ...testConfig(sim.url, makeKeys()), dashboard: { oidc_providers: [provider('idp'), provider('open', { allow_signup: true })] } });
  const client = (id: string) => ({
    client_id: `switchboard-${id}`,
    client_secret: `secret-${id}`,
    redirect_uris: [`${gw.url}/auth/${id}/callback`],
    token_endpoint_auth_method: 'client_secret_post',
  });
  const oidc = new Provider(issuer, {
    clients: [client('idp'), client('open')],
    cookies: { keys: ['a-test-only-cookie-signing-key'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    // Every login name is an account whose verified e-mail is <login>@example.test.
    findAccount: (_ctx: unknown, sub: string) => ({ accountId: sub, claims: () => ({ sub, email: `${sub}@example.test`, email_verified: true, name: `User ${sub}` }) }),
  });
  idpServer.on('request', oidc.callback());
});

afterAll(async () => {
  await gw?.stop();
  await sim?.stop();
  await new Promise((resolve) => idpServer?.close(resolve));
});

/** The browser's cookies for the gateway, as they change. */
class Browser {
  readonly jar = new Map<string, string>();
  get cookie(): string {
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  take(res: Response): Response {
    for (const line of res.headers.getSetCookie()) {
      const [pair = '', ...attrs] = line.split('; ');
      const eq = pair.indexOf('=');
      if (attrs.includes('Max-Age=0')) this.jar.delete(pair.slice(0, eq));
      else this.jar.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    return res;
  }
  async get(path: string): Promise<Response> {
    return this.take(await getPage(path.startsWith('http') ? path : url(path), this.cookie));
  }
  async post(path: string, fields: Record<string, string>): Promise<Response> {
    return this.take(await postForm(url(path), fields, this.cookie));
  }
}

/** Signs `login` in at the identity provider (its login and consent forms); returns the callback URL it redirects to. */
async function throughIdp(authorizationUrl: string, login: string): Promise<string> {
  const jar = new Browser();
  let next = authorizationUrl;
  let body: string | undefined;
  for (let i = 0; i < 20; i++) {
    const headers: Record<string, string> = { cookie: jar.cookie, ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) };
    const res = jar.take(await fetch(next, { method: body ? 'POST' : 'GET', redirect: 'manual', headers, body }));
    const location = res.headers.get('location');
    if (location) {
      const target = new URL(location, next).href;
      if (target.startsWith(gw.url)) return target;
      next = target;
      body = undefined;
      continue;
    }
    const page = await res.text();
    const action = /action="([^"]+)"/.exec(page)?.[1];
    if (res.status !== 200 || !action) throw new Error(`identity provider answered ${res.status}: ${page.slice(0, 300)}`);
    next = new URL(action, next).href;
    body = page.includes('name="login"') ? new URLSearchParams({ prompt: 'login', login, password: 'any' }).toString() : 'prompt=consent';
  }
  throw new Error('the identity provider never redirected back');
}

/** `GET /auth/{provider}` in `browser`: the authorization URL the gateway sends it to. */
async function start(browser: Browser, provider: string): Promise<URL> {
  const res = await browser.get(`/auth/${provider}`);
  expect(res.status).toBe(303);
  const target = new URL(res.headers.get('location') ?? '');
  expect(target.origin).toBe(issuer);
  expect(target.searchParams.get('code_challenge_method')).toBe('S256');
  for (const p of ['state', 'nonce', 'code_challenge']) expect(target.searchParams.get(p)?.length).toBeGreaterThan(20);
  expect(target.searchParams.get('redirect_uri')).toBe(url(`/auth/${provider}/callback`));
  return target;
}

async function signInThroughIdp(browser: Browser, provider: string, login: string): Promise<Response> {
  return browser.get(await throughIdp((await start(browser, provider)).href, login));
}

describe('OpenID Connect sign-in', () => {
  it('answers 404 for a provider the config does not declare, on both the start and the callback', async () => {
    for (const path of ['/auth/nope', '/auth/nope/callback']) {
      const res = await fetch(url(path), { redirect: 'manual' });
      expect(res.status, path).toBe(404);
      expect(await res.text()).toContain('No sign-in provider is called nope.');
    }
  });

  it('does not attach an existing account with the same verified e-mail until the user connects the provider', async () => {
    const user = await createDashboardUser(gw.dbPath, { email: 'alice@example.test' });
    const stranger = new Browser();
    const refused = await signInThroughIdp(stranger, 'idp', 'alice');
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('sign in with your password and connect');
    expect(stranger.jar.has('switchboard_session')).toBe(false);

    // Signed in with the password, Alice connects the provider from her account page.
    const browser = new Browser();
    const session = await signIn(gw.url, user);
    browser.jar.set('switchboard_session', session.cookie.split('=')[1] ?? '');
    const connect = await browser.post('/dashboard/account/identities/idp/connect', { csrf_token: session.csrfToken });
    expect(connect.status).toBe(303);
    const connected = await browser.get(await throughIdp(connect.headers.get('location') ?? '', 'alice'));
    expect(connected.status).toBe(303);
    expect(connected.headers.get('location')).toBe('/dashboard/account#providers');
    expect(await (await browser.get('/dashboard/account')).text()).toContain('IdP idp: connected as alice@example.test');

    // From now on the provider signs Alice in, with a new session id.
    const later = new Browser();
    const res = await signInThroughIdp(later, 'idp', 'alice');
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/dashboard/projects');
    const page = await later.get('/dashboard/account');
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(user.id);

    // Disconnected, it no longer does.
    const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(await (await later.get('/dashboard/account')).text())?.[1] ?? '';
    expect((await later.post('/dashboard/account/identities/idp/disconnect', { csrf_token: csrf })).status).toBe(200);
    expect((await signInThroughIdp(new Browser(), 'idp', 'alice')).status).toBe(403);
  });

  it('refuses a callback whose state does not match the flow, and a flow used twice', async () => {
    const browser = new Browser();
    const callback = new URL(await throughIdp((await start(browser, 'open')).href, 'mallory'));
    const flowCookie = browser.jar.get('switchboard_oidc');
    callback.searchParams.set('state', 'forged-state-value-forged-state-value');
    const res = await browser.get(callback.href);
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('did not pass the checks');
    expect(browser.jar.has('switchboard_session')).toBe(false);
    // The flow is gone: the same cookie with the genuine answer is refused too.
    browser.jar.set('switchboard_oidc', flowCookie ?? '');
    expect((await browser.get(callback.href)).status).toBe(400);
  });

  it('refuses an ID token whose nonce is not the flow nonce', async () => {
    const browser = new Browser();
    const authorization = await start(browser, 'open');
    authorization.searchParams.set('nonce', 'a-nonce-the-gateway-never-issued-xxxxxxxx');
    const res = await browser.get(await throughIdp(authorization.href, 'eve'));
    expect(res.status).toBe(400);
    // openid-client names the failed claim check ("unexpected JWT claim value"); the nonce is the only claim changed.
    expect(await res.text()).toContain('did not pass the checks');
    expect(browser.jar.has('switchboard_session')).toBe(false);
  });

  it('refuses a callback in a browser that did not start the flow', async () => {
    const starter = new Browser();
    const callback = await throughIdp((await start(starter, 'open')).href, 'trudy');
    const other = new Browser();
    const res = await other.get(callback);
    expect(res.status).toBe(400);
    expect(other.jar.has('switchboard_session')).toBe(false);
  });

  it('signs up an unknown identity only where the provider allows it, never over an existing e-mail', async () => {
    expect((await signInThroughIdp(new Browser(), 'idp', 'newcomer')).status).toBe(403);
    const browser = new Browser();
    const res = await signInThroughIdp(browser, 'open', 'newcomer');
    expect(res.status).toBe(303);
    expect(await (await browser.get('/dashboard/account')).text()).toContain('newcomer@example.test');
    await createDashboardUser(gw.dbPath, { email: 'bob@example.test' });
    expect((await signInThroughIdp(new Browser(), 'open', 'bob')).status).toBe(403);
  });

  it('still asks for the second factor of a user who turned it on', async () => {
    const s = await dashboardSession(gw, { email: 'carol@example.test' });
    const browser = new Browser();
    browser.jar.set('switchboard_session', s.cookie.split('=')[1] ?? '');
    const connect = await browser.post('/dashboard/account/identities/open/connect', { csrf_token: s.csrfToken });
    expect((await browser.get(await throughIdp(connect.headers.get('location') ?? '', 'carol'))).status).toBe(303);
    const setup = await (await browser.get('/dashboard/account/totp/setup')).text();
    const secret = /<code class="totp-secret">([A-Z2-7]+)<\/code>/.exec(setup)?.[1] ?? '';
    const enrolment = /name="enrolment" value="([^"]+)"/.exec(setup)?.[1] ?? '';
    const { generateSync } = await import('otplib');
    expect((await browser.post('/dashboard/account/totp/enable', { csrf_token: s.csrfToken, enrolment, code: generateSync({ secret }) })).status).toBe(200);

    const later = new Browser();
    const res = await signInThroughIdp(later, 'open', 'carol');
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/dashboard/login/totp');
    expect((await later.get('/dashboard/account')).status).toBe(303);
    expect(sessionCookieOf(res)).not.toBeNull();
  });

  it('refuses unauthenticated starts past 30 per address in 10 minutes with a 429 page, storing no flow for them', async () => {
    // Each start stores a flow row (issue 31: unthrottled, a loop filled the table). A fresh window first.
    await advanceClock(gw.url, 10 * 60_000 + 1000);
    const flows = (): number => {
      const db = new Database(gw.dbPath, { readonly: true });
      try {
        return (db.prepare('SELECT COUNT(*) AS n FROM dashboard_oidc_flows').get() as { n: number }).n;
      } finally {
        db.close();
      }
    };
    const before = flows();
    const starts = await Promise.all(Array.from({ length: 40 }, () => fetch(url('/auth/idp'), { redirect: 'manual' })));
    const counts: Record<number, number> = {};
    for (const r of starts) counts[r.status] = (counts[r.status] ?? 0) + 1;
    expect(counts).toEqual({ 303: 30, 429: 10 });
    const refused = starts.find((r) => r.status === 429);
    expect(Number(refused?.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused?.headers.getSetCookie().some((c) => c.startsWith('switchboard_oidc='))).toBe(false);
    expect(await refused?.text()).toContain('Too many sign-ins started');
    expect(flows() - before).toBe(30);
    // Leaves an empty window behind for any test after this one.
    await advanceClock(gw.url, 10 * 60_000 + 1000);
  });
});
