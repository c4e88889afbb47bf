/**
 * The operator pages in a real browser (headless Chromium through playwright-core, issue 22): sign in with
 * the password, create an API key and use it on the chat route, rotate and revoke it, edit a routing rule.
 * Every test starts from a fresh browser context (no cookie) and keeps a full-page screenshot under
 * test-artifacts/. The gateway and simulator are the real processes the API suites use.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHAT_ID, PROJECT, REASONER_ID } from '../helpers/configs.js';
import { call } from '../helpers/http.js';
import { useGatewaySuite } from '../helpers/suite.js';
import { createDashboardUser } from '../helpers/dashboard-session.js';
import { freshPage, launchChromium, screenshot } from './chromium.js';

const suite = useGatewaySuite({ limits: { management_requests_per_minute: 100_000 } });
const EMAIL = 'browser-owner@example.com';
let password = '';
let browser: Browser | null = null;

beforeAll(async () => {
  browser = await launchChromium();
  ({ password } = await createDashboardUser(suite.gw.dbPath, { email: EMAIL, role: 'owner', project: PROJECT }));
});

afterAll(async () => {
  await browser?.close();
});

const chat = (key: string) =>
  call(`${suite.gw.url}/${PROJECT}/chat/v1/chat/completions`, { key, body: { model: 'm', messages: [{ role: 'user', content: 'hello' }], max_tokens: 8 } });

/** A fresh context, signed in through the password form as a person would. */
async function signedIn(): Promise<Page> {
  if (!browser) throw new Error('Chromium did not start');
  const { page } = await freshPage(browser);
  await page.goto(`${suite.gw.url}/dashboard/projects/${PROJECT}/keys`);
  // Not signed in: the guard sends the browser to the sign-in page, which brings it back after.
  expect(new URL(page.url()).pathname).toBe('/dashboard/login');
  await page.fill('input[name="email"]', EMAIL);
  await page.fill('input[name="password"]', password);
  await Promise.all([page.waitForURL(`**/dashboard/projects/${PROJECT}/keys`), page.click('form button[type="submit"]')]);
  return page;
}

async function revealedValue(page: Page): Promise<string> {
  const value = (await page.textContent('#revealed-value'))?.trim() ?? '';
  expect(value).toMatch(/^svc_test_[A-Za-z0-9_-]{43}$/);
  return value;
}

describe('dashboard in a browser', () => {
  it('signs in with the password and lands on the page it asked for', async () => {
    const page = await signedIn();
    expect(await page.textContent('h1')).toBe('API keys');
    expect(await page.getAttribute('meta[name="csrf-token"]', 'content')).toMatch(/.{16,}/);
    await page.goto(`${suite.gw.url}/dashboard/projects`);
    expect(await page.textContent('table.projects')).toContain(PROJECT);
    await screenshot(page, 'dashboard-projects');
    await page.context().close();
  });

  it('creates a key that works on the chat route, rotates it, then revokes it', async () => {
    const page = await signedIn();
    await page.fill('#create-key input[name="name"]', 'browser key');
    await page.fill('#create-key input[name="quota_requests"]', '1000');
    await page.click('#create-key button[type="submit"]');
    await page.waitForSelector('#revealed-value');
    const first = await revealedValue(page);
    await screenshot(page, 'dashboard-key-created');
    expect((await chat(first)).status).toBe(200);

    const row = page.locator('tr', { hasText: 'browser key' });
    await row.locator('button[data-action="rotate"]').click();
    await page.waitForSelector('#revealed-value');
    const second = await revealedValue(page);
    expect(second).not.toBe(first);
    expect(await page.textContent('.secret')).toContain('previous value keeps working for 24 hours');
    await screenshot(page, 'dashboard-key-rotated');
    expect((await chat(second)).status).toBe(200);
    expect((await chat(first)).status).toBe(200);

    await page.locator('tr', { hasText: 'browser key' }).locator('button[data-action="revoke"]').click();
    await page.waitForSelector('.notice.ok');
    expect(await page.locator('tr', { hasText: 'browser key' }).locator('.status').textContent()).toBe('revoked');
    await screenshot(page, 'dashboard-key-revoked');
    expect((await chat(second)).status).toBe(401);
    await page.context().close();
  });

  it('charts the usage of the turns made so far, and shows the project overview', async () => {
    expect((await chat(suite.keys.full)).status).toBe(200);
    const page = await signedIn();
    await page.goto(`${suite.gw.url}/dashboard/projects/${PROJECT}/usage`);
    expect(await page.locator('figure.chart svg').count()).toBe(4);
    expect(await page.locator('figure.chart svg rect').count()).toBeGreaterThan(0);
    await screenshot(page, 'dashboard-usage');
    await page.goto(`${suite.gw.url}/dashboard/projects/${PROJECT}`);
    expect(await page.textContent('h1')).toBe('Overview');
    await screenshot(page, 'dashboard-overview');
    await page.context().close();
  });

  it('edits a routing rule, and the management API returns the edit', async () => {
    const created = await call(`${suite.gw.url}/${PROJECT}/v1/management/semantic-router/rules`, {
      key: suite.keys.full,
      body: { name: 'code questions', query_contains: ['python'], endpoint_id: CHAT_ID },
    });
    expect(created.status).toBe(201);
    const ruleId = (created.body as { id: string }).id;
    const page = await signedIn();
    await page.goto(`${suite.gw.url}/dashboard/projects/${PROJECT}/router`);
    await page.locator(`tr[data-rule-id="${ruleId}"] a`, { hasText: 'Edit' }).click();
    await page.waitForURL(`**/router/rules/${ruleId}`);
    await page.fill('input[name="name"]', 'reasoning questions');
    await page.fill('textarea[name="query_contains"]', 'prove\ntheorem');
    await page.selectOption('select[name="endpoint_id"]', REASONER_ID);
    await page.fill('input[name="priority"]', '5');
    await page.click('.rule-form button[type="submit"]');
    await page.waitForSelector('.notice.ok');
    expect(await page.locator(`tr[data-rule-id="${ruleId}"]`).textContent()).toContain('reasoning questions');
    // A routed turn the edited rule catches is listed with its excerpt once the page is read again.
    const routed = await call(`${suite.gw.url}/${PROJECT}/_semantic/router/v1/chat/completions`, {
      key: suite.keys.full,
      body: { model: 'm', messages: [{ role: 'user', content: 'prove this theorem for me' }], max_tokens: 8 },
    });
    expect(routed.status, JSON.stringify(routed.body)).toBe(200);
    await page.goto(`${suite.gw.url}/dashboard/projects/${PROJECT}/router`);
    expect(await page.textContent('table.decisions')).toContain('prove this theorem for me');
    await screenshot(page, 'dashboard-rule-edited');
    const rules = (await call(`${suite.gw.url}/${PROJECT}/v1/management/semantic-router/rules`, { key: suite.keys.full })).body as { data: Record<string, unknown>[] };
    expect(rules.data.find((r) => r.id === ruleId)).toMatchObject({
      name: 'reasoning questions',
      match: { query_contains: ['prove', 'theorem'] },
      action: { endpoint_id: REASONER_ID },
      priority: 5,
    });
    await page.context().close();
  });
});
