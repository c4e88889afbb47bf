/**
 * The chat playground in a real browser (headless Chromium through playwright-core, issue 23): sign in with
 * the password, open the project's playground, send a routed turn and see the answer stream in with the
 * routing decision, the usage and the harness beside it; then a second turn of the same conversation on a
 * direct endpoint. Our own script runs under the page's CSP (a CSP violation would leave the page inert).
 * Full-page screenshots go to test-artifacts/.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDashboardUser } from '../helpers/dashboard-session.js';
import { ROUTER_PROJECT, useRouterSuite, WS_MAIN } from '../helpers/router-config.js';
import { simRequests } from '../helpers/simulator-log.js';
import { freshPage, launchChromium, screenshot } from './chromium.js';

const suite = useRouterSuite();
const EMAIL = 'playground-browser@example.com';
let password = '';
let browser: Browser | null = null;

beforeAll(async () => {
  browser = await launchChromium();
  // A member: the playground is for using models, which members may do.
  ({ password } = await createDashboardUser(suite.gw.dbPath, { email: EMAIL, role: 'member', project: ROUTER_PROJECT }));
});

afterAll(async () => {
  await browser?.close();
});

async function signedInPlayground(): Promise<{ page: Page; cspErrors: string[] }> {
  if (!browser) throw new Error('Chromium did not start');
  const { page } = await freshPage(browser);
  const cspErrors: string[] = [];
  page.on('console', (m) => {
    // (Chromium's own /favicon.ico request is a 404 here, and not our concern.)
    if (m.type() === 'error' && m.text().includes('Content Security Policy')) cspErrors.push(m.text());
  });
  await page.goto(`${suite.gw.url}/dashboard/projects/${ROUTER_PROJECT}/playground`);
  expect(new URL(page.url()).pathname).toBe('/dashboard/login');
  await page.fill('input[name="email"]', EMAIL);
  await page.fill('input[name="password"]', password);
  await Promise.all([page.waitForURL(`**/dashboard/projects/${ROUTER_PROJECT}/playground`), page.click('form button[type="submit"]')]);
  return { page, cspErrors };
}

describe('the playground in a browser', () => {
  it('sends a routed turn and shows the streamed answer, the decision, the usage and the harness', async () => {
    const { page, cspErrors } = await signedInPlayground();
    expect(await page.textContent('h1')).toBe('Playground');
    expect(await page.inputValue('#target')).toBe('router');
    expect(await page.inputValue('#workspace')).toBe(WS_MAIN);
    // Harness on by default here (SPEC Passthrough 2), tool top-k excepted.
    expect(await page.isChecked('#augment')).toBe(true);
    expect(await page.isChecked('input[data-feature="maxTokensFloor"]')).toBe(true);
    expect(await page.isChecked('input[data-feature="toolTopK"]')).toBe(false);

    await page.fill('#max-tokens', '5');
    await page.fill('#message', 'compute the derivative of sin x');
    await page.click('#send');
    await page.waitForSelector('#conversation li.assistant.done');
    const answer = (await page.textContent('#conversation li.assistant .content')) ?? '';
    expect(answer.length).toBeGreaterThan(0);
    expect(await page.textContent('#decision-endpoint')).toBe('math');
    expect(await page.textContent('#decision-model')).toBe('model-math');
    expect(Number(await page.textContent('#decision-score'))).toBeGreaterThan(0);
    expect(await page.textContent('#decision-rule')).toBe('none');
    expect(Number(await page.textContent('#usage-total'))).toBeGreaterThan(0);
    expect(await page.textContent('#harness-acted')).toContain('max-tokens-floor');
    expect(await page.textContent('#turn-id')).toMatch(/^chatcmpl-/);
    await screenshot(page, 'playground-routed-turn');

    // The second turn carries the conversation, on a direct endpoint, with the floor switched off.
    await page.selectOption('#target', 'endpoint:chat');
    await page.uncheck('input[data-feature="maxTokensFloor"]');
    await page.fill('#message', 'and now a recipe for dinner');
    await page.click('#send');
    await page.waitForFunction(() => document.querySelectorAll('#conversation li.assistant.done').length === 2);
    expect(await page.textContent('#decision-endpoint')).toBe('chat');
    expect(await page.textContent('#decision-reason')).toBe('direct endpoint (no routing)');
    expect(await page.textContent('#harness-acted')).toBe('none');
    const sent = (await simRequests(suite.sim.url, 10)).find((r) => r.path === '/v1/chat/completions');
    const body = JSON.parse(sent?.body ?? '{}') as { messages: { role: string; content: string }[]; max_tokens: number };
    expect(body.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(body.messages[1]?.content).toBe(answer);
    expect(body.max_tokens).toBe(5);
    await screenshot(page, 'playground-second-turn');
    expect(cspErrors).toEqual([]);
    await page.context().close();
  });

  it('shows a refusal in words and keeps the message to send again', async () => {
    const { page } = await signedInPlayground();
    // `solo` serves other workspaces than Main: the API's own refusal, shown as its words.
    await page.selectOption('#target', 'endpoint:solo');
    await page.fill('#message', 'hello solo');
    await page.click('#send');
    await page.waitForSelector('#playground-error:not([hidden])');
    expect(await page.textContent('#playground-error')).toContain('403 workspace_not_allowed');
    expect(await page.inputValue('#message')).toBe('hello solo');
    expect(await page.locator('#conversation li.user.failed').count()).toBe(1);
    await screenshot(page, 'playground-refused');
    await page.context().close();
  });
});
