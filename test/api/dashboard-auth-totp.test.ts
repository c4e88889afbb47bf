/**
 * Two-factor sign-in over HTTP (issue 22; SPEC "Dashboard login with two-factor", Authentication 13):
 * enrolment with a server-rendered QR code, the 5-minute window after the password on the controllable
 * clock, TOTP replay, single-use backup codes, regeneration and disabling (each needing a valid TOTP code),
 * throttled verification, and the secret encrypted at rest.
 */
import { existsSync, readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { generateSync } from 'otplib';
import { describe, expect, it } from 'vitest';
import { csrfOf, dashboardSession, getPage, postForm, sessionCookieOf, type DashboardSession } from '../helpers/dashboard-session.js';
import { advanceClock } from '../helpers/http.js';
import { useGatewaySuite } from '../helpers/suite.js';

const suite = useGatewaySuite();
const url = (path: string): string => `${suite.gw.url}${path}`;

/** The gateway's clock runs ahead of ours by what the tests advanced it. */
let offsetMs = 0;
async function advance(ms: number): Promise<void> {
  const now = await advanceClock(suite.gw.url, ms);
  offsetMs = now - Date.now();
}
/** The TOTP code of the gateway's current 30-second step; advancing first makes it a step not used yet. */
async function freshCode(secret: string): Promise<string> {
  await advance(30_000);
  return generateSync({ secret, epoch: Math.floor((Date.now() + offsetMs) / 1000) });
}

interface Enrolled extends DashboardSession {
  readonly email: string;
  readonly password: string;
  readonly id: string;
  readonly secret: string;
  readonly backupCodes: string[];
}

async function enrol(): Promise<Enrolled> {
  const s = await dashboardSession(suite.gw);
  const setup = await getPage(url('/dashboard/account/totp/setup'), s.cookie);
  expect(setup.status).toBe(200);
  const page = await setup.text();
  expect(page).toContain('<svg');
  expect(page).toContain('otpauth://totp/Switchboard:');
  expect(setup.headers.get('content-security-policy')).not.toContain('unsafe-inline');
  const secret = /<code class="totp-secret">([A-Z2-7]+)<\/code>/.exec(page)?.[1] ?? '';
  const enrolment = /name="enrolment" value="([^"]+)"/.exec(page)?.[1] ?? '';
  expect(secret.length).toBeGreaterThanOrEqual(16);

  const wrong = await postForm(url('/dashboard/account/totp/enable'), { csrf_token: s.csrfToken, enrolment, code: '000000' }, s.cookie);
  expect(wrong.status).toBe(400);
  const res = await postForm(url('/dashboard/account/totp/enable'), { csrf_token: s.csrfToken, enrolment, code: await freshCode(secret) }, s.cookie);
  expect(res.status).toBe(200);
  const done = await res.text();
  const backupCodes = [...done.matchAll(/<li><code>([a-z0-9]{5}-[a-z0-9]{5})<\/code><\/li>/g)].map((m) => m[1] ?? '');
  expect(backupCodes).toHaveLength(10);
  expect(new Set(backupCodes).size).toBe(10);
  // A privilege change: the session gets a new id, and the old one stops working.
  const cookie = sessionCookieOf(res) ?? '';
  expect(cookie).not.toBe(s.cookie);
  expect((await getPage(url('/dashboard/account'), s.cookie)).status).toBe(303);
  return { cookie, csrfToken: csrfOf(done) ?? '', ...s.user, secret, backupCodes };
}

/** The password step of a user with two-factor: a second-factor session, not a signed-in one. */
async function passwordStep(user: { email: string; password: string }): Promise<{ cookie: string; csrfToken: string }> {
  const res = await postForm(url('/dashboard/login'), { email: user.email, password: user.password, next: '/dashboard/account' });
  expect(res.status).toBe(303);
  expect(res.headers.get('location')).toBe('/dashboard/login/totp');
  const cookie = sessionCookieOf(res) ?? '';
  expect((await getPage(url('/dashboard/account'), cookie)).status).toBe(303);
  const page = await getPage(url('/dashboard/login/totp'), cookie);
  expect(page.status).toBe(200);
  return { cookie, csrfToken: csrfOf(await page.text()) ?? '' };
}

function secondStep(step: { cookie: string; csrfToken: string }, code: string): Promise<Response> {
  return postForm(url('/dashboard/login/totp'), { csrf_token: step.csrfToken, code }, step.cookie);
}

async function signedInWith(user: Enrolled, code: () => Promise<string> | string): Promise<string> {
  const step = await passwordStep(user);
  const res = await secondStep(step, await code());
  expect(res.status).toBe(303);
  expect(res.headers.get('location')).toBe('/dashboard/account');
  const cookie = sessionCookieOf(res) ?? '';
  expect(cookie).not.toBe(step.cookie);
  expect((await getPage(url('/dashboard/account'), cookie)).status).toBe(200);
  return cookie;
}

describe('two-factor sign-in', () => {
  it('keeps the TOTP secret encrypted at rest and the backup codes hashed', async () => {
    const user = await enrol();
    const file = [suite.gw.dbPath, `${suite.gw.dbPath}-wal`].filter((f) => existsSync(f)).map((f) => readFileSync(f).toString('latin1')).join('');
    expect(file).not.toContain(user.secret);
    for (const c of user.backupCodes) expect(file).not.toContain(c);
    expect(file).not.toContain(user.password);
  });

  it('asks for the code after the password and accepts a TOTP code only once', async () => {
    const user = await enrol();
    const code = await freshCode(user.secret);
    await signedInWith(user, () => code);
    // The same code again (same time step): refused, the sign-in stays at the second step.
    const step = await passwordStep(user);
    const replay = await secondStep(step, code);
    expect(replay.status).toBe(401);
    expect(sessionCookieOf(replay)).toBeNull();
    expect(await replay.text()).toContain('already used');
    const ok = await secondStep(step, await freshCode(user.secret));
    expect(ok.status).toBe(303);
  });

  it('starts over when the code comes more than 5 minutes after the password', async () => {
    const user = await enrol();
    const step = await passwordStep(user);
    await advance(5 * 60_000 + 1000);
    const late = await secondStep(step, await freshCode(user.secret));
    expect(late.status).toBe(303);
    expect(late.headers.get('location')).toBe('/dashboard/login?expired=1');
    expect(sessionCookieOf(late)).toBeNull();
    expect((await getPage(url('/dashboard/login/totp'), step.cookie)).headers.get('location')).toBe('/dashboard/login?expired=1');
    // Within the window it works.
    const again = await passwordStep(user);
    await advance(4 * 60_000);
    expect((await secondStep(again, await freshCode(user.secret))).status).toBe(303);
  });

  it('accepts each backup code once, in place of a TOTP code', async () => {
    const user = await enrol();
    const backup = user.backupCodes[0] ?? '';
    await signedInWith(user, () => backup.toUpperCase());
    const step = await passwordStep(user);
    expect((await secondStep(step, backup)).status).toBe(401);
    expect((await secondStep(step, user.backupCodes[1] ?? '')).status).toBe(303);
  });

  it('regenerates backup codes only with a valid TOTP code, invalidating every previous one', async () => {
    const user = await enrol();
    const regenerate = (code: string) => postForm(url('/dashboard/account/backup-codes'), { csrf_token: user.csrfToken, code }, user.cookie);
    expect((await regenerate('000000')).status).toBe(401);
    expect((await regenerate(user.backupCodes[0] ?? '')).status).toBe(401);
    const res = await regenerate(await freshCode(user.secret));
    expect(res.status).toBe(200);
    const fresh = [...(await res.text()).matchAll(/<li><code>([a-z0-9]{5}-[a-z0-9]{5})<\/code><\/li>/g)].map((m) => m[1] ?? '');
    expect(fresh).toHaveLength(10);
    const step = await passwordStep(user);
    expect((await secondStep(step, user.backupCodes[2] ?? '')).status).toBe(401);
    expect((await secondStep(step, fresh[0] ?? '')).status).toBe(303);
  });

  it('turns two-factor off only with a valid TOTP code, removing the secret and every backup code', async () => {
    const user = await enrol();
    const disable = (code: string) => postForm(url('/dashboard/account/totp/disable'), { csrf_token: user.csrfToken, code }, user.cookie);
    expect((await disable('000000')).status).toBe(401);
    const res = await disable(await freshCode(user.secret));
    expect(res.status).toBe(200);
    const db = new Database(suite.gw.dbPath, { readonly: true });
    try {
      expect(db.prepare('SELECT totp_secret_sealed AS s FROM dashboard_users WHERE id = ?').get(user.id)).toEqual({ s: null });
      expect(db.prepare('SELECT COUNT(*) AS n FROM dashboard_backup_codes WHERE user_id = ?').get(user.id)).toEqual({ n: 0 });
    } finally {
      db.close();
    }
    const signIn = await postForm(url('/dashboard/login'), { email: user.email, password: user.password });
    expect(signIn.headers.get('location')).toBe('/dashboard/projects');
  });

  it('throttles wrong codes: after 5 failures even the right code waits', async () => {
    const user = await enrol();
    const step = await passwordStep(user);
    for (let i = 0; i < 5; i++) expect((await secondStep(step, `00000${i}`)).status).toBe(401);
    const refused = await secondStep(step, await freshCode(user.secret));
    expect(refused.status).toBe(429);
    expect(sessionCookieOf(refused)).toBeNull();
  });
});
