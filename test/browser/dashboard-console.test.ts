/**
 * The operator's console pages in a real browser (issue 34): Requests (filters, a row's detail, the empty
 * state), Usage and cost (money per day, key, model and endpoint, named; the CSV is the tables) and
 * Endpoints and models. One gateway, one browser, one signed-in page for every case: the turns are made
 * once, before the first page is opened.
 */
import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHAT_ID, makeKeys, PROJECT, testConfig } from '../helpers/configs.js';
import { createDashboardUser } from '../helpers/dashboard-session.js';
import { call } from '../helpers/http.js';
import { mintTestKey, startGatewayProcess, startSimulatorProcess } from '../helpers/processes.js';
import { useProcesses } from '../helpers/suite.js';
import { freshPage, launchChromium, screenshot } from './chromium.js';

const NAMED_KEY = mintTestKey('test');
const KEY_NAME = 'Billing <bot>';
const suite = useProcesses(async () => {
  const keys = makeKeys();
  const sim = await startSimulatorProcess();
  const config = testConfig(sim.url, keys, {
    limits: { management_requests_per_minute: 100_000 },
    extraKeys: [{ value: NAMED_KEY, name: KEY_NAME, scopes: ['inference'] }],
  });
  // Prices on the chat endpoint only: the other endpoints' turns stay unpriced (a dash, never $0).
  const chat = config.projects[0].endpoints.find((e) => e.id === CHAT_ID);
  if (chat) chat.prices = { input_per_million: 2, output_per_million: 8 };
  const gw = await startGatewayProcess(config);
  return { sim, gw, keys };
});

const EMAIL = 'console-owner@example.com';
let browser: Browser | null = null;
let page: Page | null = null;
const url = (path: string): string => `${suite.gw.url}/dashboard/projects/${PROJECT}${path}`;
const turn = (key: string, slug: string, extra: Record<string, unknown> = {}) =>
  call(`${suite.gw.url}/${PROJECT}/${slug}/v1/chat/completions`, { key, body: { model: 'm', messages: [{ role: 'user', content: 'hello' }], max_tokens: 8, ...extra } });

/** Rows of a table as cell texts. */
const cells = (p: Page, selector: string): Promise<string[][]> =>
  p.$$eval(`${selector} tbody tr`, (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => (td.textContent ?? '').trim())));

beforeAll(async () => {
  // The turns: two priced ones with the named key, one erroring upstream, one on another model, one routed.
  expect((await turn(NAMED_KEY, 'chat')).status).toBe(200);
  expect((await turn(NAMED_KEY, 'chat', { stream: true })).status).toBe(200);
  expect((await turn(suite.keys.full, 'plain', { sim: { error_status: 500 } })).status).toBeGreaterThanOrEqual(500);
  expect((await turn(suite.keys.full, 'plain')).status).toBe(200);
  const rule = await call(`${suite.gw.url}/${PROJECT}/v1/management/semantic-router/rules`, {
    key: suite.keys.full,
    body: { name: 'python questions', query_contains: ['python'], endpoint_id: CHAT_ID },
  });
  expect(rule.status).toBe(201);
  const routed = await call(`${suite.gw.url}/${PROJECT}/_semantic/router/v1/chat/completions`, {
    key: suite.keys.full,
    body: { model: 'auto', messages: [{ role: 'user', content: 'a python question' }], max_tokens: 8 },
  });
  expect(routed.status).toBe(200);

  browser = await launchChromium();
  const { password } = await createDashboardUser(suite.gw.dbPath, { email: EMAIL, role: 'owner', project: PROJECT });
  ({ page } = await freshPage(browser));
  await page.goto(url('/requests'));
  await page.fill('input[name="email"]', EMAIL);
  await page.fill('input[name="password"]', password);
  await Promise.all([page.waitForURL(`**/dashboard/projects/${PROJECT}/requests`), page.click('form button[type="submit"]')]);
});

afterAll(async () => {
  await browser?.close();
});

function signedIn(): Page {
  if (!page) throw new Error('the browser did not sign in');
  return page;
}

/** Submits the filter form with these choices and waits for the answer. */
async function filter(p: Page, choices: { key?: string; model?: string; status?: string; from?: string; to?: string }): Promise<void> {
  await p.goto(url('/requests'));
  if (choices.key !== undefined) await p.selectOption('select[name="key"]', { label: choices.key });
  if (choices.model !== undefined) await p.selectOption('select[name="model"]', choices.model);
  if (choices.status !== undefined) await p.selectOption('select[name="status"]', choices.status);
  if (choices.from !== undefined) await p.fill('input[name="from"]', choices.from);
  if (choices.to !== undefined) await p.fill('input[name="to"]', choices.to);
  await Promise.all([p.waitForURL('**/requests?*'), p.click('#request-filters button[type="submit"]')]);
}

describe('the operator console in a browser', () => {
  it('lists the turns newest first with names, status, latency, tokens and cost', async () => {
    const p = signedIn();
    await p.goto(url('/requests'));
    expect(await p.textContent('h1')).toBe('Requests');
    // The navigation names the new pages.
    expect(await p.locator('nav.tabs a').allTextContents()).toEqual(expect.arrayContaining(['Requests', 'Usage and cost', 'Endpoints and models']));
    const rows = await cells(p, 'table.requests');
    expect(rows).toHaveLength(5);
    // Newest first: the routed turn, then the plain ones, then the named key's two.
    expect(rows[0]?.[4]).toBe('router');
    expect(rows.slice(3).map((r) => r[1])).toEqual([KEY_NAME, KEY_NAME]);
    expect(rows[3]?.[10]).toMatch(/^\$0\.\d*[1-9]\d*$/);
    expect(rows[1]?.[10]).toBe('—');
    expect(rows[2]?.[5]).toMatch(/^error/);
    // The streamed turn has a time to first token; the buffered ones do not.
    expect(rows[3]?.[7]).toMatch(/ms$/);
    expect(rows[4]?.[7]).toBe('—');
    await screenshot(p, 'console-requests');
  });

  it('filters by key, model, status and days, and says so when nothing matches', async () => {
    const p = signedIn();
    await filter(p, { key: KEY_NAME });
    expect((await cells(p, 'table.requests')).map((r) => r[1])).toEqual([KEY_NAME, KEY_NAME]);
    await filter(p, { model: 'model-plain' });
    expect(await cells(p, 'table.requests')).toHaveLength(2);
    await filter(p, { model: 'model-plain', status: 'error' });
    const failed = await cells(p, 'table.requests');
    expect(failed).toHaveLength(1);
    expect(failed[0]?.[5]).toMatch(/^error \(\w+\)$/);
    // The filters survive in the form.
    expect(await p.inputValue('select[name="status"]')).toBe('error');
    await filter(p, { from: '2020-01-01', to: '2020-01-31' });
    expect(await p.locator('table.requests').count()).toBe(0);
    expect(await p.textContent('.empty')).toContain('No requests match these filters.');
    await screenshot(p, 'console-requests-empty');
  });

  it("opens a routed row's detail: request id, decision, upstream server, retries; never the prompt", async () => {
    const p = signedIn();
    await p.goto(url('/requests'));
    await p.locator('table.requests tbody tr').first().locator('a').click();
    await p.waitForURL('**/requests/*');
    const detail = (await p.textContent('dl.request')) ?? '';
    expect(detail).toMatch(/Request idchatcmpl-|Request id[a-z]/);
    expect(detail).toContain(suite.sim.url.replace(/\/+$/, ''));
    expect(detail).toMatch(/Retries0/);
    const decision = (await p.textContent('dl.decision')) ?? '';
    expect(decision).toContain('route_reason');
    expect(decision).toContain('chat');
    expect(await p.content()).not.toContain('a python question');
    await screenshot(p, 'console-request-detail');
  });

  it('shows money per day, key, model and endpoint with names, and the CSV is those tables', async () => {
    const p = signedIn();
    await p.goto(url('/usage'));
    expect(await p.textContent('h1')).toBe('Usage and cost');
    expect(await p.textContent('#usage-total-cost')).toMatch(/^\$0\.\d*[1-9]\d*$/);
    const byKey = await cells(p, 'table.cost[data-dimension="key"]');
    expect(byKey.find((r) => r[0] === KEY_NAME)?.[5]).toMatch(/^\$0\.\d*[1-9]\d*$/);
    const byEndpoint = await cells(p, 'table.cost[data-dimension="endpoint"]');
    expect(byEndpoint.map((r) => r[0])).toEqual(expect.arrayContaining(['Test chat (chat)', 'Test plain (plain)']));
    expect(byEndpoint.find((r) => r[0] === 'Test plain (plain)')?.[5]).toBe('—');
    const byModel = await cells(p, 'table.cost[data-dimension="model"]');
    expect(byModel.map((r) => r[0])).toEqual(expect.arrayContaining(['model-chat', 'model-plain']));
    // No bare UUID names a row anywhere.
    for (const dim of ['day', 'key', 'model', 'endpoint']) {
      for (const r of await cells(p, `table.cost[data-dimension="${dim}"]`)) expect(r[0]).not.toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-/);
    }
    const [download] = await Promise.all([p.waitForEvent('download'), p.click('#usage-csv')]);
    const csv = readFileSync((await download.path()) ?? '', 'utf8').trim().split('\r\n');
    expect(csv[0]).toBe('dimension,name,requests,tokens_in,tokens_out,cached_tokens,cost_usd,unpriced_requests');
    const shown: string[] = [];
    for (const dim of ['day', 'key', 'model', 'endpoint']) {
      for (const r of await cells(p, `table.cost[data-dimension="${dim}"]`)) {
        const name = /[",]/.test(r[0] ?? '') ? `"${(r[0] ?? '').replace(/"/g, '""')}"` : r[0];
        shown.push([dim, name, r[1], r[2], r[3], r[4], r[5] === '—' ? '' : r[5]?.slice(1), r[6]].join(','));
      }
    }
    expect(csv.slice(1)).toEqual(shown);
    await screenshot(p, 'console-usage-cost');
  });

  it('lists endpoints with model, capabilities, prices and upstream health, and the aliases', async () => {
    const alias = await call(`${suite.gw.url}/${PROJECT}/v1/models`, { key: suite.keys.full, body: { id: 'house-model', target: 'model-chat' } });
    expect(alias.status).toBe(201);
    const p = signedIn();
    await p.goto(url('/endpoints'));
    expect(await p.textContent('h1')).toBe('Endpoints and models');
    const chat = p.locator('tr[data-endpoint="chat"]');
    expect(await chat.textContent()).toContain('model-chat');
    expect(await chat.locator('.capabilities').textContent()).toContain('tools');
    expect(await chat.locator('.prices').textContent()).toContain('input $2 / M tokens');
    expect(await chat.locator('ul.servers li .status').textContent()).toBe('up');
    expect(await p.locator('tr[data-endpoint="plain"] .prices').textContent()).toBe('no prices');
    expect(await p.locator('table.aliases').textContent()).toContain('house-model');
    await screenshot(p, 'console-endpoints');
  });
});
