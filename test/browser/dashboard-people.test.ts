/**
 * The dashboard's people-facing pages in a real browser (issue 34): the sign-in page (product name, a
 * clear refusal, the configured providers), approvals showing what is being approved and who decided by
 * name, the members page (owners add, change and remove; others read; the last owner stays), and the
 * account link on every page. One gateway with a scripted execution agent, one browser, one signed-in
 * page per person, reused across the cases; screenshots under test-artifacts/.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execConfig, makeExecKeys, mintJoinKey, OTHER_PROJECT, PROJECT, WS_B, WS_OPS } from '../helpers/exec-config.js';
import { connectTestAgent, type TestAgent } from '../helpers/exec-test-agent.js';
import { createDashboardUser, getPage, postForm, signIn, type DashboardUser } from '../helpers/dashboard-session.js';
import { call } from '../helpers/http.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/processes.js';
import { freshPage, launchChromium, screenshot } from './chromium.js';

const keys = makeExecKeys();
let gw: GatewayProcess;
let agent: TestAgent;
let browser: Browser;
let ada: DashboardUser;
let bob: DashboardUser;
/** The only owner of the other project. */
let dan: DashboardUser;
let bobPage: Page;

const LONG_NOTE = `rotate the logs, then ${'x'.repeat(300)}`;
const url = (path: string): string => `${gw.url}${path}`;
const projectPage = (section: string, project = PROJECT): string => url(`/dashboard/projects/${project}${section === '' ? '' : `/${section}`}`);

/** A fresh browser context signed in through the password form. */
async function signedIn(user: DashboardUser, landing = '/dashboard/projects'): Promise<Page> {
  const { page } = await freshPage(browser);
  await page.goto(url('/dashboard/login'));
  await page.fill('input[name="email"]', user.email);
  await page.fill('input[name="password"]', user.password);
  await Promise.all([page.waitForURL(`**${landing}`), page.click('form[action="/dashboard/login"] button[type="submit"]')]);
  return page;
}

beforeAll(async () => {
  // The provider is only listed on the sign-in page: its discovery happens at the first /auth/corp, never here.
  const provider = { id: 'corp', name: 'Corp SSO', issuer: 'http://127.0.0.1:9', client_id: 'switchboard', client_secret: 'unused', allow_insecure_issuer: true };
  [gw, browser] = await Promise.all([startGatewayProcess({ ...execConfig(keys), dashboard: { oidc_providers: [provider] } }), launchChromium()]);
  agent = await connectTestAgent(gw.url, PROJECT, await mintJoinKey(gw.url, keys.exec), {
    name: 'ops-runner',
    tools: [{ name: 'rm', risk: 'destructive', input_schema: { type: 'object' } }],
  });
  [ada, bob, dan] = await Promise.all([
    createDashboardUser(gw.dbPath, { email: 'ada@example.test', role: 'owner', project: PROJECT }),
    createDashboardUser(gw.dbPath, { email: 'bob@example.test', role: 'owner', project: PROJECT }),
    createDashboardUser(gw.dbPath, { email: 'dan@example.test', role: 'owner', project: OTHER_PROJECT }),
  ]);
  bobPage = await signedIn(bob);
});

afterAll(async () => {
  await bobPage?.context().close();
  await browser?.close();
  await agent?.close();
  await gw?.stop();
});

describe('the sign-in page', () => {
  it('names the product, lists the identity providers, and says plainly when the password is wrong', async () => {
    const { context, page } = await freshPage(browser);
    await page.goto(url('/dashboard/login'));
    expect(await page.textContent('h1')).toBe('Sign in to Switchboard');
    expect(await page.textContent('header.top .brand')).toBe('Switchboard');
    expect(await page.locator('ul.providers a', { hasText: 'Sign in with Corp SSO' }).getAttribute('href')).toBe('/auth/corp');
    await page.fill('input[name="email"]', ada.email);
    await page.fill('input[name="password"]', 'not the password at all');
    const [answer] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/dashboard/login') && r.request().method() === 'POST'), page.click('form[action="/dashboard/login"] button')]);
    expect(answer.status()).toBe(401);
    expect(await page.textContent('[role="alert"]')).toBe('The e-mail or the password is wrong: check both and try again.');
    // The e-mail is kept; the password is not.
    expect(await page.inputValue('input[name="email"]')).toBe(ada.email);
    expect(await page.inputValue('input[name="password"]')).toBe('');
    await screenshot(page, 'dashboard-people-signin-refused');
    await context.close();
  });
});

describe('approvals', () => {
  it('says so when nothing waits and nothing was decided', async () => {
    await bobPage.goto(projectPage('approvals'));
    expect(await bobPage.textContent('#pending .empty')).toBe('Nothing waits for a decision.');
    expect(await bobPage.textContent('#decided .empty')).toBe('No decided approvals yet.');
  });

  it('shows the tool, folded arguments, agent, workspace, requester, stage and time left; then the decider by name', async () => {
    // Ada mints a key of her own and asks with it; Bob, another owner, decides.
    const s = await signIn(gw.url, ada);
    const minted = await postForm(projectPage('keys'), { name: 'ada-deploys', scopes: 'execution', workspace_mode: 'all', csrf_token: s.csrfToken }, s.cookie, { origin: gw.url });
    const value = /id="revealed-value">([^<]+)</.exec(await minted.text())?.[1] ?? '';
    expect(value).toMatch(/^svc_/);
    const asked = await call(url(`/${PROJECT}/v1/exec/invocations`), { key: value, body: { workspace_id: WS_OPS, tool_name: 'rm', arguments: { path: '/srv/app', recursive: true, note: LONG_NOTE } } });
    expect(asked.status, JSON.stringify(asked.body)).toBe(201);
    const approvalId = (asked.body as { approval_id: string }).approval_id;

    await bobPage.goto(projectPage('approvals'));
    const card = bobPage.locator(`#pending article[data-approval-id="${approvalId}"]`);
    expect(await card.locator('code.tool').textContent()).toBe('rm');
    const args = (await card.locator('pre.arguments').textContent()) ?? '';
    expect(args).toContain('\n  "path": "/srv/app",\n  "recursive": true,');
    expect(args).toContain(`"note": "${LONG_NOTE.slice(0, 60)}… (${LONG_NOTE.length - 60} more characters, below)"`);
    expect(args).not.toContain(LONG_NOTE);
    const folded = card.locator('details.folded');
    expect(await folded.locator('summary').textContent()).toBe(`note in full (${LONG_NOTE.length} characters)`);
    expect(await folded.locator('pre').isVisible()).toBe(false);
    await folded.locator('summary').click();
    expect(await folded.locator('pre').textContent()).toBe(LONG_NOTE);
    expect(await card.locator('dd.agent').textContent()).toMatch(/^ops-runner .*\(would run it now\)$/);
    expect(await card.locator('dd.workspace').textContent()).toBe(WS_OPS);
    const requester = (await card.locator('dd.requester').textContent()) ?? '';
    expect(requester).toContain('ada-deploys');
    expect(requester).toContain(`ada@example.test ${ada.id}`);
    expect(await card.locator('.stage').textContent()).toBe('stage 1 of 3: oncall');
    expect(await card.locator('.time-left').textContent()).toMatch(/^(\d+ s|1 min) left$/);
    await screenshot(bobPage, 'dashboard-people-approval-pending');

    await Promise.all([bobPage.waitForSelector('.notice.ok'), card.locator('button', { hasText: 'Accept' }).click()]);
    const decided = bobPage.locator(`#decided article[data-approval-id="${approvalId}"]`);
    // By name, the id beside it: never a bare usr_ id.
    expect(await decided.locator('dd.decider').textContent()).toMatch(new RegExp(`^bob@example.test ${bob.id} \\d{4}-`));
    expect(await bobPage.locator('#pending .empty').textContent()).toBe('Nothing waits for a decision.');
    await agent.waitForDispatch(1);
    await screenshot(bobPage, 'dashboard-people-approval-decided');
  });
});

describe('members', () => {
  let carolPassword = '';

  it('lets an owner add a new user with a role and workspaces, then change the role, then remove them', async () => {
    await bobPage.goto(projectPage('members'));
    expect(await bobPage.locator('table.members tr', { hasText: 'bob@example.test' }).locator('.you').count()).toBe(1);
    const form = bobPage.locator('#add-member form');
    await form.locator('input[name="email"]').fill('carol@example.test');
    await form.locator('input[name="name"]').fill('Carol');
    await form.locator('select[name="role"]').selectOption('admin');
    await form.locator('input[name="workspace_mode"][value="selected"]').check();
    await form.locator(`input[name="workspaces"][value="${WS_B}"]`).check();
    await Promise.all([bobPage.waitForSelector('#new-password'), form.locator('button[type="submit"]').click()]);
    carolPassword = (await bobPage.textContent('#new-password'))?.trim() ?? '';
    expect(carolPassword.length).toBeGreaterThanOrEqual(12);
    const row = bobPage.locator('table.members tr', { hasText: 'carol@example.test' });
    expect(await row.locator('td.role').textContent()).toBe('admin');
    expect(await row.locator('td.workspaces').textContent()).toContain(WS_B);
    await screenshot(bobPage, 'dashboard-people-member-added');

    await row.locator('select[name="role"]').selectOption('member');
    await row.locator('input[name="workspace_mode"][value="all"]').check();
    await Promise.all([bobPage.waitForSelector('.notice.ok'), row.locator('form.member-role button').click()]);
    expect(await bobPage.textContent('.notice.ok')).toContain('carol@example.test is now member');
    const changed = bobPage.locator('table.members tr', { hasText: 'carol@example.test' });
    expect(await changed.locator('td.role').textContent()).toBe('member');
    expect(await changed.locator('td.workspaces').textContent()).toBe('every workspace');

    // Carol, a member now, reads the list without controls, and a change she sends anyway is refused.
    const carol = await signedIn({ id: '', email: 'carol@example.test', password: carolPassword });
    await carol.goto(projectPage('members'));
    expect(await carol.locator('table.members tr').count()).toBe(4);
    expect(await carol.locator('#add-member').count()).toBe(0);
    expect(await carol.locator('button[data-action="remove"]').count()).toBe(0);
    const s = await signIn(gw.url, { email: 'carol@example.test', password: carolPassword });
    const bobRow = (await carol.locator('table.members tr', { hasText: 'bob@example.test' }).getAttribute('data-user-id')) ?? '';
    const refused = await postForm(projectPage(`members/${bobRow}/remove`), { csrf_token: s.csrfToken }, s.cookie, { origin: gw.url });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('only its owners may make this change');
    await carol.context().close();

    await Promise.all([bobPage.waitForSelector('.notice.ok'), bobPage.locator('table.members tr', { hasText: 'carol@example.test' }).locator('button[data-action="remove"]').click()]);
    expect(await bobPage.textContent('.notice.ok')).toContain('carol@example.test was removed');
    expect(await bobPage.locator('table.members tr', { hasText: 'carol@example.test' }).count()).toBe(0);
    // Out of the project, its pages answer her as any stranger's: not found.
    expect((await getPage(projectPage('members'), s.cookie)).status).toBe(404);
  });

  it('keeps the last owner: neither removed nor demoted, even by themselves', async () => {
    const page = await signedIn(dan);
    await page.goto(projectPage('members', OTHER_PROJECT));
    const own = page.locator('table.members tr', { hasText: 'dan@example.test' });
    const [removal] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/remove')), own.locator('button[data-action="remove"]').click()]);
    expect(removal.status()).toBe(409);
    expect(await page.textContent('.notice.error')).toContain('dan@example.test is the only owner of');
    await page.locator('table.members tr', { hasText: 'dan@example.test' }).locator('select[name="role"]').selectOption('admin');
    const [demotion] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/role')), page.locator('table.members tr', { hasText: 'dan@example.test' }).locator('form.member-role button').click()]);
    expect(demotion.status()).toBe(409);
    expect(await page.locator('table.members tr', { hasText: 'dan@example.test' }).locator('td.role').textContent()).toBe('owner');
    await screenshot(page, 'dashboard-people-last-owner');
    await page.context().close();
  });
});

describe('navigation', () => {
  it('links to the account page from every page', async () => {
    const pages = ['/dashboard/projects', '/dashboard/account', ...['', 'keys', 'router', 'webhooks', 'usage', 'approvals', 'members', 'playground'].map((s) => projectPage(s).slice(gw.url.length))];
    for (const path of pages) {
      await bobPage.goto(url(path));
      const link = bobPage.locator('header.top nav.who a.account');
      expect(await link.isVisible(), path).toBe(true);
      expect(await link.getAttribute('href'), path).toBe('/dashboard/account');
    }
    await Promise.all([bobPage.waitForURL('**/dashboard/account'), bobPage.locator('header.top a.account').click()]);
    expect(await bobPage.textContent('h1')).toBe('Account');
  });
});
