/**
 * Dashboard sign-in over HTTP against the real gateway (issue 22; SPEC Authentication 10, 14, 16): users made
 * with the CLI, the password step, cookie flags, session fixation, CSRF refusal with nothing changed,
 * session expiry on the controllable clock, password change and admin reset, user deletion -> key_inactive,
 * and a user-owned key limited to its user's workspaces.
 */
import { describe, expect, it } from 'vitest';
import { keyPrefix } from '../../src/core/auth/key-token.js';
import { PROJECT, WS_B, WS_C, WS_DEFAULT } from '../helpers/configs.js';
import { createDashboardUser, csrfOf, dashboardSession, getPage, postForm, runCliWithStdin, sessionCookieOf, signIn } from '../helpers/dashboard-session.js';
import { advanceClock, call, errorOf, expectError } from '../helpers/http.js';
import { runCli } from '../helpers/processes.js';
import { useGatewaySuite } from '../helpers/suite.js';

const suite = useGatewaySuite();
const url = (path: string): string => `${suite.gw.url}${path}`;
/** A direct route of the chat endpoint (served in every workspace): authenticates and resolves the workspace. */
const direct = (): string => url(`/${PROJECT}/chat/v1/models`);

async function accountStatus(cookie: string): Promise<number> {
  return (await getPage(url('/dashboard/account'), cookie)).status;
}

/** A user-owned key, made on the dashboard's keys page (every workspace the user can read). */
async function userOwnedKey(session: { cookie: string; csrfToken: string }, scope: 'inference' | 'management' = 'inference'): Promise<string> {
  const res = await postForm(url(`/dashboard/projects/${PROJECT}/keys`), { csrf_token: session.csrfToken, name: 'mine', scopes: scope, workspace_mode: 'all' }, session.cookie);
  const page = await res.text();
  const value = /id="revealed-value">([^<]+)</.exec(page)?.[1];
  if (res.status !== 201 || !value) throw new Error(`key creation failed: ${res.status} ${page.slice(0, 400)}`);
  return value;
}

describe('users CLI', () => {
  it('reads the password from standard input only, and lists, resets and deletes users', async () => {
    const noStdin = await runCli(['users', 'create', '--db', suite.gw.dbPath, '--email', 'a@example.test', '--role', 'owner', '--project', PROJECT]);
    expect(noStdin.code).toBe(2);
    expect(noStdin.stderr).toContain('--password-stdin');
    const flag = await runCli(['users', 'create', '--db', suite.gw.dbPath, '--email', 'a@example.test', '--password', 'hunter2hunter2', '--role', 'owner', '--project', PROJECT]);
    expect(flag.code).toBe(2);
    const short = await runCliWithStdin(['users', 'create', '--db', suite.gw.dbPath, '--email', 'a@example.test', '--password-stdin', '--role', 'owner', '--project', PROJECT], 'short\n');
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('--password');

    const user = await createDashboardUser(suite.gw.dbPath, { email: 'Listed@Example.test', role: 'admin' });
    expect(user.id).toMatch(/^usr_[0-9a-f]{24}$/);
    const dup = await runCliWithStdin(['users', 'create', '--db', suite.gw.dbPath, '--email', 'listed@example.test', '--password-stdin', '--role', 'owner', '--project', PROJECT], 'another-password-1\n');
    expect(dup.code).toBe(2);
    const list = await runCli(['users', 'list', '--db', suite.gw.dbPath, '--json']);
    const listed = (JSON.parse(list.stdout) as { data: { id: string; email: string; roles: { project_id: string; role: string }[] }[] }).data.find((u) => u.id === user.id);
    expect(listed).toMatchObject({ email: 'listed@example.test', roles: [{ project_id: PROJECT, role: 'admin' }] });
    // Neither the password nor its hash is printed.
    expect(list.stdout).not.toContain(user.password);
    expect(list.stdout).not.toContain('scrypt');
  });
});

describe('password sign-in', () => {
  it('answers an unknown e-mail exactly as a wrong password', async () => {
    const user = await createDashboardUser(suite.gw.dbPath);
    const wrong = await postForm(url('/dashboard/login'), { email: user.email, password: 'not-the-password' });
    const unknown = await postForm(url('/dashboard/login'), { email: 'nobody-here@example.test', password: 'not-the-password' });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(sessionCookieOf(wrong)).toBeNull();
    const strip = (page: string, email: string): string => page.replace(email, 'E');
    expect(strip(await wrong.text(), user.email)).toBe(strip(await unknown.text(), 'nobody-here@example.test'));
  });

  it('sets an HttpOnly, SameSite=Lax session cookie (not Secure over plain HTTP in development) and a fresh id at sign-in', async () => {
    const user = await createDashboardUser(suite.gw.dbPath);
    // Session fixation: an id planted in the browser before sign-in is never the signed-in one.
    const planted = 'switchboard_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
    const res = await postForm(url('/dashboard/login'), { email: user.email, password: user.password, next: '/dashboard/account' }, planted);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/dashboard/account');
    const line = res.headers.getSetCookie().find((c) => c.startsWith('switchboard_session='));
    expect(line).toBeDefined();
    const attributes = (line ?? '').split('; ').slice(1);
    expect(attributes).toEqual(expect.arrayContaining(['Path=/', 'HttpOnly', 'SameSite=Lax']));
    expect(attributes).not.toContain('Secure');
    expect(line).not.toContain('Domain');
    const cookie = sessionCookieOf(res) ?? '';
    expect(cookie).not.toBe(planted);
    expect(cookie.length).toBeGreaterThan(40);
    expect(await accountStatus(planted)).toBe(303);
    expect(await accountStatus(cookie)).toBe(200);

    // A second sign-in in the same browser replaces the session: the old id stops working.
    const again = await postForm(url('/dashboard/login'), { email: user.email, password: user.password }, cookie);
    const second = sessionCookieOf(again) ?? '';
    expect(second).not.toBe(cookie);
    expect(await accountStatus(cookie)).toBe(303);
    expect(await accountStatus(second)).toBe(200);
  });

  it('never redirects outside the dashboard after sign-in', async () => {
    const user = await createDashboardUser(suite.gw.dbPath);
    const res = await postForm(url('/dashboard/login'), { email: user.email, password: user.password, next: '//evil.example/x' });
    expect(res.headers.get('location')).toBe('/dashboard/projects');
  });

  it('redirects a page without a session to the sign-in page, and answers a write without one with 401 session_required', async () => {
    const page = await getPage(url(`/dashboard/projects/${PROJECT}/keys?x=1`));
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe(`/dashboard/login?next=${encodeURIComponent(`/dashboard/projects/${PROJECT}/keys?x=1`)}`);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('referrer-policy')).toBe('same-origin');
    const write = await call(url(`/dashboard/projects/${PROJECT}/keys`), { body: 'name=x' });
    expectError(write, 401, 'session_required');
  });

  it('throttles failed passwords per account, then lets the account in once the window has passed', async () => {
    const user = await createDashboardUser(suite.gw.dbPath);
    for (let i = 0; i < 10; i++) expect((await postForm(url('/dashboard/login'), { email: user.email, password: `wrong-${i}` })).status).toBe(401);
    const refused = await postForm(url('/dashboard/login'), { email: user.email, password: user.password });
    expect(refused.status).toBe(429);
    expect(sessionCookieOf(refused)).toBeNull();
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    await advanceClock(suite.gw.url, 15 * 60_000 + 1000);
    expect((await postForm(url('/dashboard/login'), { email: user.email, password: user.password })).status).toBe(303);
  });

  it('counts a wrong current password on the password form with the failed sign-ins: a session cannot guess without limit', async () => {
    const s = await dashboardSession(suite.gw);
    const change = (current: string) => postForm(url('/dashboard/account/password'), { csrf_token: s.csrfToken, current, password: 'never-set-password-1' }, s.cookie);
    for (let i = 0; i < 10; i++) expect((await change(`wrong-${i}`)).status).toBe(403);
    const refused = await change(s.user.password);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // The same counters as sign-in: the account is held there too, and the password did not change.
    expect((await postForm(url('/dashboard/login'), { email: s.user.email, password: s.user.password })).status).toBe(429);
    await advanceClock(suite.gw.url, 15 * 60_000 + 1000);
    expect((await postForm(url('/dashboard/login'), { email: s.user.email, password: s.user.password })).status).toBe(303);
  });
});

describe('CSRF (SPEC Authentication 16)', () => {
  it('refuses a write without the token, with a wrong one, or from another origin, and changes nothing', async () => {
    const s = await dashboardSession(suite.gw);
    const change = { current: s.user.password, password: 'a-brand-new-password' };
    const cases: [Record<string, string>, Record<string, string>][] = [
      [change, {}],
      [{ ...change, csrf_token: 'forged' }, {}],
      [change, { 'x-csrf-token': `${s.csrfToken}x` }],
      [{ ...change, csrf_token: s.csrfToken }, { origin: 'http://evil.example' }],
      [{ ...change, csrf_token: s.csrfToken }, { 'sec-fetch-site': 'cross-site' }],
    ];
    for (const [fields, headers] of cases) {
      const res = await postForm(url('/dashboard/account/password'), fields, s.cookie, headers);
      expectError({ status: res.status, headers: res.headers, body: await res.json() }, 403, 'csrf_token_invalid');
    }
    // Nothing changed: the session still works and the old password still signs in.
    expect(await accountStatus(s.cookie)).toBe(200);
    await signIn(suite.gw.url, s.user);

    // The header alone (a page's fetch) is enough, as is the form field.
    const viaHeader = await postForm(url('/dashboard/account/password'), { current: 'wrong-password-here', password: 'a-brand-new-password' }, s.cookie, { 'x-csrf-token': s.csrfToken });
    expect(viaHeader.status).toBe(403);
    expect(await viaHeader.text()).toContain('current password is wrong');
  });

  it('puts the per-session token in the page meta tag, different for each session', async () => {
    const s = await dashboardSession(suite.gw);
    const other = await signIn(suite.gw.url, s.user);
    expect(other.csrfToken).not.toBe(s.csrfToken);
    const page = await (await getPage(url('/dashboard/account'), s.cookie)).text();
    expect(csrfOf(page)).toBe(s.csrfToken);
    expect(page).not.toMatch(/<script/i);
    expect(page).not.toMatch(/style=/i);
  });
});

describe('sessions (SPEC Authentication 14)', () => {
  it('lists the user sessions and revokes another one', async () => {
    const s = await dashboardSession(suite.gw);
    const other = await signIn(suite.gw.url, s.user);
    const page = await (await getPage(url('/dashboard/account'), s.cookie)).text();
    const ids = [...page.matchAll(/name="session" value="([^"]+)"/g)].map((m) => m[1] ?? '');
    expect(ids).toHaveLength(1);
    const res = await postForm(url('/dashboard/account/sessions/revoke'), { csrf_token: s.csrfToken, session: ids[0] ?? '' }, s.cookie);
    expect(res.status).toBe(200);
    expect(await accountStatus(other.cookie)).toBe(303);
    expect(await accountStatus(s.cookie)).toBe(200);
  });

  it('signs out: the cookie is cleared and the session is gone', async () => {
    const s = await dashboardSession(suite.gw);
    const res = await postForm(url('/dashboard/logout'), { csrf_token: s.csrfToken }, s.cookie);
    expect(res.status).toBe(303);
    expect(res.headers.getSetCookie().some((c) => c.startsWith('switchboard_session=;') && c.includes('Max-Age=0'))).toBe(true);
    expect(await accountStatus(s.cookie)).toBe(303);
  });

  it('a password change ends every session of the user; so does an admin reset', async () => {
    const s = await dashboardSession(suite.gw);
    const other = await signIn(suite.gw.url, s.user);
    const res = await postForm(url('/dashboard/account/password'), { csrf_token: s.csrfToken, current: s.user.password, password: 'changed-password-1' }, s.cookie);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/dashboard/login?password_changed=1');
    expect(await accountStatus(s.cookie)).toBe(303);
    expect(await accountStatus(other.cookie)).toBe(303);
    expect((await postForm(url('/dashboard/login'), { email: s.user.email, password: s.user.password })).status).toBe(401);
    const fresh = await signIn(suite.gw.url, { email: s.user.email, password: 'changed-password-1' });

    const reset = await runCliWithStdin(['users', 'reset-password', s.user.email, '--db', suite.gw.dbPath, '--password-stdin'], 'reset-by-admin-1\n');
    expect(reset.code).toBe(0);
    expect(await accountStatus(fresh.cookie)).toBe(303);
    await signIn(suite.gw.url, { email: s.user.email, password: 'reset-by-admin-1' });
  });

  it('ends after 480 idle minutes, extended by activity, and 1440 minutes after sign-in in any case', async () => {
    const idle = await dashboardSession(suite.gw);
    const active = await signIn(suite.gw.url, idle.user);
    for (let i = 0; i < 3; i++) {
      await advanceClock(suite.gw.url, 400 * 60_000);
      expect(await accountStatus(active.cookie)).toBe(200);
    }
    // 1200 minutes in: the idle one went past 480 minutes without a request.
    expect(await accountStatus(idle.cookie)).toBe(303);
    await advanceClock(suite.gw.url, 241 * 60_000);
    expect(await accountStatus(active.cookie)).toBe(303);
  });
});

describe('user-owned API keys (SPEC Authentication 10, "API key" states)', () => {
  it('reach exactly the workspaces their user can read, checked on every request', async () => {
    const s = await dashboardSession(suite.gw, { role: 'admin', workspaces: [WS_B] });
    const key = await userOwnedKey(s);
    const inB = await call(direct(), { key, headers: { 'x-workspace-id': WS_B } });
    expect(inB.status).toBe(200);
    expectError(await call(direct(), { key, headers: { 'x-workspace-id': WS_C } }), 403, 'workspace_not_allowed');
    // No workspace named: the default workspace is not one the user reads, and only B is: B.
    expect((await call(direct(), { key })).status).toBe(200);
  });

  it('follow their user: a workspace the user gains later is reached at once, one lost is not', async () => {
    const s = await dashboardSession(suite.gw, { role: 'admin', workspaces: [WS_B] });
    const key = await userOwnedKey(s);
    const inWs = async (ws: string) => (await call(direct(), { key, headers: { 'x-workspace-id': ws } })).status;
    expect(await inWs(WS_DEFAULT)).toBe(403);
    const grant = async (...extra: string[]) => {
      const res = await runCli(['users', 'grant', s.user.email, '--role', 'admin', '--project', PROJECT, '--db', suite.gw.dbPath, ...extra]);
      expect(res.code, res.stderr).toBe(0);
    };
    await grant('--workspaces', `${WS_B},${WS_DEFAULT}`);
    await expect.poll(() => inWs(WS_DEFAULT), { timeout: 5000, interval: 100 }).toBe(200);
    await grant('--workspaces', WS_DEFAULT);
    await expect.poll(() => inWs(WS_B), { timeout: 5000, interval: 100 }).toBe(403);
    expect(await inWs(WS_DEFAULT)).toBe(200);
  });

  it('reach every workspace of a user who reads all, and run in the default one when none is named', async () => {
    const s = await dashboardSession(suite.gw, { role: 'owner' });
    const key = await userOwnedKey(s);
    for (const ws of [WS_DEFAULT, WS_B]) {
      expect((await call(direct(), { key, headers: { 'x-workspace-id': ws } })).status).toBe(200);
    }
  });

  it("create keys through the management API only while their user owns the project; the new key has no user", async () => {
    const createWith = (key: string) => call(url(`/${PROJECT}/v1/management/api-keys`), { key, method: 'POST', body: { name: 'made by a personal key' } });
    const owner = await dashboardSession(suite.gw, { role: 'owner' });
    const ownerKey = await userOwnedKey(owner, 'management');
    const made = await createWith(ownerKey);
    expect(made.status).toBe(201);
    const created = made.body as { id: string; value: string; scopes: string[] };
    expect(created.scopes).toEqual(['inference']);
    // "A key created with another API key has no user": it outlives its creator's user.
    expect((await call(direct(), { key: created.value })).status).toBe(200);

    const admin = await dashboardSession(suite.gw, { role: 'admin' });
    const adminKey = await userOwnedKey(admin, 'management');
    const refused = await createWith(adminKey);
    expectError(refused, 403, 'workspace_not_allowed');

    // The role is read on every request: an owner made admin loses the right at once.
    const demoted = await runCli(['users', 'grant', owner.user.email, '--role', 'admin', '--project', PROJECT, '--db', suite.gw.dbPath]);
    expect(demoted.code, demoted.stderr).toBe(0);
    await expect.poll(async () => (await createWith(ownerKey)).status, { timeout: 5000, interval: 100 }).toBe(403);

    const deleted = await runCli(['users', 'delete', owner.user.id, '--db', suite.gw.dbPath]);
    expect(deleted.code, deleted.stderr).toBe(0);
    await expect.poll(async () => (await call(direct(), { key: ownerKey })).status, { timeout: 5000, interval: 100 }).toBe(401);
    expect((await call(direct(), { key: created.value })).status).toBe(200);
  });

  it('reach no further than their user: decision excerpts, rotations and created keys stay inside the workspaces the user reads', async () => {
    const s = await dashboardSession(suite.gw, { role: 'admin', workspaces: [WS_B] });
    const mine = await userOwnedKey(s, 'management');
    // Two routed turns, one in a workspace the user reads and one outside it.
    const routed = async (ws: string, text: string): Promise<string> => {
      const res = await call(url(`/${PROJECT}/_semantic/router/v1/chat/completions`), { key: suite.keys.full, headers: { 'x-workspace-id': ws }, body: { model: 'auto', messages: [{ role: 'user', content: text }] } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return String(res.headers.get('x-request-id'));
    };
    const outside = await routed(WS_DEFAULT, 'an excerpt from the default workspace');
    const inside = await routed(WS_B, 'an excerpt from workspace b');
    const excerpts = async (key: string) => {
      const res = await call(url(`/${PROJECT}/v1/management/semantic-router/decisions?limit=200`), { key });
      expect(res.status).toBe(200);
      const rows = (res.body as { data: { decision_request_id: string; query_preview: string }[] }).data;
      return Object.fromEntries(rows.filter((r) => [outside, inside].includes(r.decision_request_id)).map((r) => [r.decision_request_id, r.query_preview]));
    };
    expect(await excerpts(mine)).toEqual({ [outside]: '', [inside]: 'an excerpt from workspace b' });
    expect(await excerpts(suite.keys.full)).toEqual({ [outside]: 'an excerpt from the default workspace', [inside]: 'an excerpt from workspace b' });

    // A key with no user and no list reaches every workspace: neither the page nor the user's key may rotate it (the value would be theirs).
    const listed = await call(url(`/${PROJECT}/v1/management/api-keys?limit=100`), { key: suite.keys.full });
    const everywhere = (listed.body as { data: { id: string; prefix: string }[] }).data.find((k) => k.prefix === keyPrefix(suite.keys.managementOnly))?.id ?? '';
    const byApi = await call(url(`/${PROJECT}/v1/management/api-keys/${everywhere}/rotate`), { key: mine, method: 'POST' });
    expectError(byApi, 403, 'workspace_not_allowed');
    expect(errorOf(byApi).message).toContain('reaches workspaces you cannot read');
    const byPage = await postForm(url(`/dashboard/projects/${PROJECT}/keys/${everywhere}/rotate`), { csrf_token: s.csrfToken }, s.cookie);
    expect(byPage.status).toBe(403);
    expect(await byPage.text()).not.toMatch(/id="revealed-value"/);
    // Its own key, and a key confined to a workspace it reads, it may.
    const confined = (await call(url(`/${PROJECT}/v1/management/api-keys`), { key: suite.keys.full, body: { name: 'b only', allowed_workspace_ids: [WS_B] } })).body as { id: string };
    expect((await call(url(`/${PROJECT}/v1/management/api-keys/${confined.id}/rotate`), { key: mine, method: 'POST' })).status).toBe(200);
    const listedMine = await call(url(`/${PROJECT}/v1/management/api-keys?limit=100`), { key: suite.keys.full });
    const mineId = (listedMine.body as { data: { id: string; prefix: string }[] }).data.find((k) => k.prefix === keyPrefix(mine))?.id ?? '';
    expect((await postForm(url(`/dashboard/projects/${PROJECT}/keys/${mineId}/rotate`), { csrf_token: s.csrfToken }, s.cookie)).status).toBe(200);

    // An owner who reads one workspace creates keys confined to it, never one reaching every workspace.
    const owner = await dashboardSession(suite.gw, { role: 'owner', workspaces: [WS_B] });
    const ownerKey = await userOwnedKey(owner, 'management');
    const create = (body: object) => call(url(`/${PROJECT}/v1/management/api-keys`), { key: ownerKey, body });
    expectError(await create({ name: 'everywhere' }), 403, 'workspace_not_allowed', 'allowed_workspace_ids');
    expectError(await create({ name: 'elsewhere', allowed_workspace_ids: [WS_DEFAULT] }), 403, 'workspace_not_allowed', 'allowed_workspace_ids');
    expect((await create({ name: 'b', allowed_workspace_ids: [WS_B] })).status).toBe(201);
  });

  it('answer 401 key_inactive once their user is deleted', async () => {
    const s = await dashboardSession(suite.gw);
    const key = await userOwnedKey(s);
    expect((await call(url(`/${PROJECT}/v1/models`), { key })).status).toBe(200);
    const deleted = await runCli(['users', 'delete', s.user.id, '--db', suite.gw.dbPath]);
    expect(deleted.code).toBe(0);
    expect(deleted.stdout).toContain('1 API key(s) revoked');
    // The running gateway notices another process's write within a second (store/catalog.ts).
    await expect.poll(async () => (await call(url(`/${PROJECT}/v1/models`), { key })).status, { timeout: 5000, interval: 100 }).toBe(401);
    expectError(await call(url(`/${PROJECT}/v1/models`), { key }), 401, 'key_inactive');
    expect(await accountStatus(s.cookie)).toBe(303);
  });
});
