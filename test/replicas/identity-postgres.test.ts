/**
 * Dashboard identity shared through PostgreSQL (issue 12): two gateway processes on one database, each
 * with a SQLite file of its own, as replicas on two hosts. A user created against A's config signs in on
 * B, a session cookie issued by A opens B's pages, and signing out on A ends that session on B. TOTP
 * secrets sealed by one replica open on the other: they share SWITCHBOARD_SECRET_KEY (PG_GATEWAY_ENV).
 */
import { generateSync } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig } from '../helpers/configs.js';
import { csrfOf, getPage, postForm, runCliWithStdin, sessionCookieOf, signIn } from '../helpers/dashboard-session.js';
import { advanceClock } from '../helpers/http.js';
import { freshDatabase, PG_GATEWAY_ENV, requirePostgres, type TestDatabase } from '../helpers/postgres.js';
import { startGatewayProcess, startSimulatorProcess, tempDir, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';

beforeAll(requirePostgres);

describe('dashboard identity on PostgreSQL, two replicas', () => {
  let database: TestDatabase;
  let sim: SimulatorProcess;
  let a: GatewayProcess;
  let b: GatewayProcess;

  beforeAll(async () => {
    [database, sim] = await Promise.all([freshDatabase(), startSimulatorProcess()]);
    const dir = tempDir();
    const config = { ...testConfig(sim.url, makeKeys()), storage: { kind: 'postgres', url: database.url } };
    // One after the other: the first migrates the database, the second finds it current.
    a = await startGatewayProcess(config, { dir, dbPath: `${dir}/replica-a.db`, env: PG_GATEWAY_ENV });
    b = await startGatewayProcess(config, { dir, dbPath: `${dir}/replica-b.db`, env: PG_GATEWAY_ENV });
  }, 120_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop(), sim?.stop()]);
    await database?.drop();
  });

  /** `switchboard users create` against A's config: the users land in PostgreSQL, not in A's file. */
  async function createUser(email: string, password: string): Promise<string> {
    const run = await runCliWithStdin(['users', 'create', '--config', a.configPath, '--email', email, '--password-stdin', '--role', 'owner', '--project', PROJECT], `${password}\n`);
    expect(run.stderr).toContain(`created user ${email}`);
    expect(run.code).toBe(0);
    return run.stdout.trim();
  }

  it('signs a user created on A in on B, opens B with A\'s cookie, and ends the session everywhere when A signs out', async () => {
    const user = { email: 'shared@example.test', password: 'a-long-shared-password' };
    await createUser(user.email, user.password);

    // Signed in on B: B's own session works on B.
    const onB = await signIn(b.url, user);
    expect((await getPage(`${b.url}/dashboard/account`, onB.cookie)).status).toBe(200);

    // A's cookie opens a page on B.
    const onA = await signIn(a.url, user);
    const page = await getPage(`${b.url}/dashboard/account`, onA.cookie);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(user.email);

    // Signed out on A: B no longer honours that cookie, and sends the browser to sign in.
    const out = await postForm(`${a.url}/dashboard/logout`, { csrf_token: onA.csrfToken }, onA.cookie);
    expect(out.status).toBe(303);
    const after = await getPage(`${b.url}/dashboard/account`, onA.cookie);
    expect(after.status).toBe(303);
    expect(after.headers.get('location')).toMatch(/^\/dashboard\/login\?next=/);
    // B's own session is another one, still open.
    expect((await getPage(`${b.url}/dashboard/account`, onB.cookie)).status).toBe(200);
  });

  it('refuses on B the password a user had before it was reset through A\'s config', async () => {
    const email = 'reset@example.test';
    await createUser(email, 'the-first-password-1');
    const before = await signIn(b.url, { email, password: 'the-first-password-1' });
    const reset = await runCliWithStdin(['users', 'reset-password', email, '--config', a.configPath, '--password-stdin'], 'the-second-password-2\n');
    expect(reset.code).toBe(0);
    // SPEC Authentication 14: a reset ends every session of the user, on every replica.
    expect((await getPage(`${b.url}/dashboard/account`, before.cookie)).status).toBe(303);
    expect((await postForm(`${b.url}/dashboard/login`, { email, password: 'the-first-password-1' })).status).toBe(401);
    await signIn(b.url, { email, password: 'the-second-password-2' });
  });

  it('completes on B a two-factor enrolment set up on A, and accepts on A the codes of the secret B stored', async () => {
    const user = { email: 'totp@example.test', password: 'a-long-totp-password' };
    await createUser(user.email, user.password);
    const s = await signIn(a.url, user);
    const setup = await (await getPage(`${a.url}/dashboard/account/totp/setup`, s.cookie)).text();
    const secret = /<code class="totp-secret">([A-Z2-7]+)<\/code>/.exec(setup)?.[1] ?? '';
    const enrolment = /name="enrolment" value="([^"]+)"/.exec(setup)?.[1] ?? '';
    // The enrolment form is sealed by A and opened by B.
    // Each replica has its own controllable clock: moving one on by `ms` gives a time step not used yet there.
    const codeOn = async (gw: GatewayProcess, ms: number): Promise<string> => generateSync({ secret, epoch: Math.floor((await advanceClock(gw.url, ms)) / 1000) });
    const enabled = await postForm(`${b.url}/dashboard/account/totp/enable`, { csrf_token: s.csrfToken, enrolment, code: await codeOn(b, 30_000) }, s.cookie);
    expect(enabled.status).toBe(200);
    const backupCodes = [...(await enabled.text()).matchAll(/<li><code>([a-z0-9]{5}-[a-z0-9]{5})<\/code><\/li>/g)].map((m) => m[1] ?? '');
    expect(backupCodes).toHaveLength(10);

    // The password on B, the second factor on A: A opens the secret B sealed. A's clock goes further than
    // B's went, so its step is later than the one B's enrolment used (a step is accepted once, anywhere).
    const password = await postForm(`${b.url}/dashboard/login`, { email: user.email, password: user.password });
    expect(password.headers.get('location')).toBe('/dashboard/login/totp');
    const half = sessionCookieOf(password) ?? '';
    const csrfToken = csrfOf(await (await getPage(`${b.url}/dashboard/login/totp`, half)).text()) ?? '';
    const second = await postForm(`${a.url}/dashboard/login/totp`, { csrf_token: csrfToken, code: await codeOn(a, 90_000) }, half);
    expect(second.status).toBe(303);
    const full = sessionCookieOf(second) ?? '';
    expect((await getPage(`${b.url}/dashboard/account`, full)).status).toBe(200);
  });

  it('lists the users of PostgreSQL, and refuses a --db file beside a postgres config', async () => {
    const list = await runCliWithStdin(['users', 'list', '--config', b.configPath, '--json'], '');
    expect(list.code).toBe(0);
    const emails = (JSON.parse(list.stdout) as { data: { email: string }[] }).data.map((u) => u.email);
    expect(emails).toEqual(expect.arrayContaining(['shared@example.test', 'reset@example.test']));
    const refused = await runCliWithStdin(['users', 'list', '--config', b.configPath, '--db', b.dbPath], '');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('leave --db out');
  });
});
