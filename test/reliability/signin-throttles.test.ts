/**
 * Sign-in throttles hold under concurrency and across worker threads (issue 31 item 4). An attacker-style
 * probe sent 200 wrong passwords for one account at once: every one was checked against the limit of 10
 * before any had failed (the failure was recorded after the user lookup and scrypt), so all 200 were
 * evaluated; and under `serve --workers 2` each worker kept its own counters, doubling every limit. The
 * attempt is now reserved before the check, in counters shared by the workers (and replicas).
 */
import { generateSync } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../helpers/configs.js';
import { createDashboardUser, csrfOf, getPage, postForm, sessionCookieOf, signIn, type DashboardUser } from '../helpers/dashboard-session.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/processes.js';
import { useSimulator } from '../helpers/suite.js';

const simulator = useSimulator();
/** One gateway process as embedded (counters in the process), one with two worker threads. */
let single: GatewayProcess;
let workers: GatewayProcess;
/** Made at once (each is a CLI run): the password flood's account on each gateway, the two-factor user. */
let users: { single: DashboardUser; workers: DashboardUser; twoFactor: DashboardUser };

beforeAll(async () => {
  [single, workers] = await Promise.all([
    startGatewayProcess(testConfig(simulator.sim.url, simulator.keys)),
    startGatewayProcess(testConfig(simulator.sim.url, simulator.keys), { extraArgs: ['--workers', '2'] }),
  ]);
  const [a, b, c] = await Promise.all([createDashboardUser(single.dbPath), createDashboardUser(workers.dbPath), createDashboardUser(workers.dbPath)]);
  users = { single: a, workers: b, twoFactor: c };
});

afterAll(async () => {
  await Promise.all([single?.stop(), workers?.stop()]);
});

/** How many of `responses` had each status. */
function tally(responses: readonly Response[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const r of responses) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
}

/** 200 wrong passwords for `user` at once (fetch opens a connection per request in flight); then the right one. */
async function passwordFlood(gw: GatewayProcess, user: DashboardUser): Promise<{ counts: Record<number, number>; right: Response }> {
  const flood = await Promise.all(Array.from({ length: 200 }, (_, i) => postForm(`${gw.url}/dashboard/login`, { email: user.email, password: `wrong-${i}` })));
  await Promise.all(flood.map((r) => r.arrayBuffer()));
  const refused = flood.find((r) => r.status === 429);
  expect(Number(refused?.headers.get('retry-after'))).toBeGreaterThan(0);
  return { counts: tally(flood), right: await postForm(`${gw.url}/dashboard/login`, { email: user.email, password: user.password }) };
}

describe('failed password throttle (10 per account in 15 minutes)', () => {
  it('evaluates at most 10 of 200 concurrent wrong passwords, refuses the rest with 429, then the right password too', async () => {
    const { counts, right } = await passwordFlood(single, users.single);
    expect(counts).toEqual({ 401: 10, 429: 190 });
    expect(right.status).toBe(429);
    expect(sessionCookieOf(right)).toBeNull();
  });

  it('holds across the worker threads of serve --workers 2: 10 evaluated in all, not 10 per worker', async () => {
    const { counts, right } = await passwordFlood(workers, users.workers);
    expect(counts).toEqual({ 401: 10, 429: 190 });
    expect(right.status).toBe(429);
  });
});

describe('second-factor throttle (5 per account in 5 minutes)', () => {
  it('evaluates at most 5 of 60 concurrent wrong codes across two workers, then refuses the right code', async () => {
    const gw = workers;
    const s = { ...(await signIn(gw.url, users.twoFactor)), user: users.twoFactor };
    const setup = await (await getPage(`${gw.url}/dashboard/account/totp/setup`, s.cookie)).text();
    const secret = /<code class="totp-secret">([A-Z2-7]+)<\/code>/.exec(setup)?.[1] ?? '';
    const enrolment = /name="enrolment" value="([^"]+)"/.exec(setup)?.[1] ?? '';
    const enabled = await postForm(`${gw.url}/dashboard/account/totp/enable`, { csrf_token: s.csrfToken, enrolment, code: generateSync({ secret }) }, s.cookie);
    expect(enabled.status).toBe(200);

    const password = await postForm(`${gw.url}/dashboard/login`, { email: s.user.email, password: s.user.password });
    expect(password.headers.get('location')).toBe('/dashboard/login/totp');
    const cookie = sessionCookieOf(password) ?? '';
    const csrfToken = csrfOf(await (await getPage(`${gw.url}/dashboard/login/totp`, cookie)).text()) ?? '';
    // Codes no time step near now accepts: each one is wrong.
    const epoch = Math.floor(Date.now() / 1000);
    const near = new Set([-60, -30, 0, 30, 60].map((d) => generateSync({ secret, epoch: epoch + d })));
    const wrong = Array.from({ length: 100 }, (_, i) => String(i).padStart(6, '0')).filter((c) => !near.has(c)).slice(0, 60);
    const flood = await Promise.all(wrong.map((code) => postForm(`${gw.url}/dashboard/login/totp`, { csrf_token: csrfToken, code }, cookie)));
    await Promise.all(flood.map((r) => r.arrayBuffer()));
    expect(tally(flood)).toEqual({ 401: 5, 429: 55 });
    const right = await postForm(`${gw.url}/dashboard/login/totp`, { csrf_token: csrfToken, code: generateSync({ secret }) }, cookie);
    expect(right.status).toBe(429);
    expect(sessionCookieOf(right)).toBeNull();
  });
});
