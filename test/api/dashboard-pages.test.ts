/**
 * The dashboard's operator pages over HTTP, against a real gateway and simulator (issue 22 "Pages"):
 * members read and cannot write, another project's page is 404, a write without the CSRF token changes
 * nothing, a key created in the dashboard belongs to its user and works on the chat route, and what the
 * pages change is what the management API reads (both run the same use cases in src/app/).
 */
import { describe, expect, it } from 'vitest';
import { CHAT_ID, OTHER_PROJECT, PROJECT, REASONER_ID, WS_B, WS_DEFAULT } from '../helpers/configs.js';
import { signInAs, type DashboardSession } from './dashboard-pages-session.js';
import { call } from '../helpers/http.js';
import { useGatewaySuite } from '../helpers/suite.js';

const suite = useGatewaySuite({ limits: { management_requests_per_minute: 100_000 } });

const pagePath = (section: string, project = PROJECT): string => `/dashboard/projects/${project}${section ? `/${section}` : ''}`;
const mgmt = (path: string): string => `${suite.gw.url}/${PROJECT}/v1/management/${path}`;

interface PageAnswer {
  readonly status: number;
  readonly html: string;
  readonly headers: Headers;
}

async function getPage(s: DashboardSession, path: string): Promise<PageAnswer> {
  const res = await fetch(`${suite.gw.url}${path}`, { headers: { cookie: s.cookie }, redirect: 'manual' });
  return { status: res.status, html: await res.text(), headers: res.headers };
}

/** A form POST as the browser sends it; `csrf: null` leaves the token out, a string replaces it. */
async function postForm(s: DashboardSession, path: string, fields: [string, string][], csrf: string | null = s.csrf): Promise<PageAnswer> {
  const body = new URLSearchParams(csrf === null ? fields : [...fields, ['csrf_token', csrf]]);
  const res = await fetch(`${suite.gw.url}${path}`, {
    method: 'POST',
    headers: { cookie: s.cookie, 'content-type': 'application/x-www-form-urlencoded', origin: suite.gw.url },
    body: body.toString(),
    redirect: 'manual',
  });
  return { status: res.status, html: await res.text(), headers: res.headers };
}

const listKeys = async (): Promise<{ id: string; name: string | null; status: string; allowed_workspace_ids: string[] | null }[]> => {
  const res = await call(mgmt('api-keys'), { key: suite.keys.full });
  expect(res.status).toBe(200);
  return (res.body as { data: { id: string; name: string | null; status: string; allowed_workspace_ids: string[] | null }[] }).data;
};

const chat = (key: string) =>
  call(`${suite.gw.url}/${PROJECT}/chat/v1/chat/completions`, { key, body: { model: 'm', messages: [{ role: 'user', content: 'hello' }], max_tokens: 8 } });

const revealed = (html: string): string => {
  const m = html.match(/id="revealed-value">([^<]+)</);
  if (!m?.[1]) throw new Error(`no value shown once in the page:\n${html.slice(0, 2000)}`);
  return m[1];
};

let counter = 0;
const session = (role: 'owner' | 'admin' | 'member', workspaces: readonly string[] | null = null): Promise<DashboardSession> =>
  signInAs(suite.gw, { email: `pages-${role}-${(counter += 1)}@example.com`, projectId: PROJECT, role, workspaceIds: workspaces });

describe('dashboard pages: roles', () => {
  it('sends /dashboard and /dashboard/ to the projects page, and a visitor without a session to sign in first', async () => {
    const s = await session('member');
    for (const path of ['/dashboard', '/dashboard/']) {
      const page = await getPage(s, path);
      expect(page.status, path).toBe(303);
      expect(page.headers.get('location')).toBe('/dashboard/projects');
    }
    const anonymous = await fetch(`${suite.gw.url}/dashboard`, { redirect: 'manual' });
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get('location')).toMatch(/^\/dashboard\/login\?next=/);
  });

  it('lets a member read every page of the project, with no write form on it', async () => {
    const s = await session('member');
    for (const section of ['', 'keys', 'router', 'webhooks', 'usage', 'approvals']) {
      const page = await getPage(s, pagePath(section));
      expect(page.status, section).toBe(200);
      expect(page.headers.get('content-type')).toContain('text/html');
      expect(page.html).toContain(`<meta name="csrf-token" content="${s.csrf}">`);
    }
    expect((await getPage(s, pagePath('keys'))).html).not.toContain('id="create-key"');
    expect((await getPage(s, pagePath('router'))).html).not.toContain('Save settings');
  });

  it('refuses a member write with 403 and changes nothing', async () => {
    const s = await session('member');
    const before = await listKeys();
    const page = await postForm(s, pagePath('keys'), [['name', 'by-member'], ['scopes', 'inference']]);
    expect(page.status).toBe(403);
    expect(page.html).toContain('Nothing was changed');
    expect(await listKeys()).toEqual(before);
    const target = before.find((k) => k.status === 'active');
    if (target) expect((await postForm(s, `${pagePath('keys')}/${target.id}/revoke`, [])).status).toBe(403);
    expect(await listKeys()).toEqual(before);
  });

  it("answers 404 for another project's pages, read or write, and changes nothing there", async () => {
    const s = await session('owner');
    expect((await getPage(s, pagePath('keys', OTHER_PROJECT))).status).toBe(404);
    expect((await getPage(s, pagePath('', 'proj_nosuch'))).status).toBe(404);
    const write = await postForm(s, pagePath('keys', OTHER_PROJECT), [['name', 'x'], ['scopes', 'inference']]);
    expect(write.status).toBe(404);
    const other = await call(`${suite.gw.url}/${OTHER_PROJECT}/v1/models`, { key: suite.keys.otherProject });
    expect(other.status).toBe(200);
  });

  it('lists only the projects the user has a role in', async () => {
    const s = await session('admin');
    const page = await getPage(s, '/dashboard/projects');
    expect(page.status).toBe(200);
    expect(page.html).toContain(PROJECT);
    expect(page.html).not.toContain(OTHER_PROJECT);
  });
});

describe('dashboard pages: CSRF', () => {
  it('refuses a form without the token, or with a wrong one, with 403 and nothing created', async () => {
    const s = await session('admin');
    const before = await listKeys();
    const missing = await postForm(s, pagePath('keys'), [['name', 'no-token'], ['scopes', 'inference']], null);
    expect(missing.status).toBe(403);
    const wrong = await postForm(s, pagePath('keys'), [['name', 'wrong-token'], ['scopes', 'inference']], `${s.csrf}x`);
    expect(wrong.status).toBe(403);
    const rules = await call(mgmt('semantic-router/rules'), { key: suite.keys.full });
    const ruleWrite = await postForm(s, pagePath('router/rules'), [['name', 'x'], ['query_contains', 'python'], ['endpoint_id', CHAT_ID]], null);
    expect(ruleWrite.status).toBe(403);
    expect(await listKeys()).toEqual(before);
    expect((await call(mgmt('semantic-router/rules'), { key: suite.keys.full })).body).toEqual(rules.body);
  });
});

describe('dashboard pages: API keys', () => {
  it('creates a key owned by the user that works on the chat route at once, shown once', async () => {
    const s = await session('admin');
    const page = await postForm(s, pagePath('keys'), [['name', 'from-dashboard'], ['scopes', 'inference'], ['workspace_mode', 'all'], ['quota_requests', '100'], ['quota_window', '60']]);
    expect(page.status, page.html.slice(0, 500)).toBe(201);
    expect(page.headers.get('cache-control')).toBe('no-store');
    const value = revealed(page.html);
    expect(value).toMatch(/^svc_test_[A-Za-z0-9_-]{43}$/);
    const res = await chat(value);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const listed = (await listKeys()).find((k) => k.name === 'from-dashboard');
    expect(listed).toMatchObject({ status: 'active', allowed_workspace_ids: null });
    // Shown once: the list page never carries the value again.
    expect((await getPage(s, pagePath('keys'))).html).not.toContain(value);
  });

  it('refuses a workspace the user cannot read, and a bad IP, in words naming the field, creating nothing', async () => {
    const s = await session('admin', [WS_DEFAULT]);
    const before = await listKeys();
    const ws = await postForm(s, pagePath('keys'), [['name', 'confined'], ['scopes', 'inference'], ['workspace_mode', 'selected'], ['workspaces', WS_B]]);
    expect(ws.status).toBe(400);
    expect(ws.html).toContain('allowed_workspace_ids[0]');
    const ip = await postForm(s, pagePath('keys'), [['name', 'bad-ip'], ['scopes', 'inference'], ['allowed_ips', '10.0.0.300']]);
    expect(ip.status).toBe(400);
    expect(ip.html).toContain('allowed_ips[0]');
    expect(ip.html).toContain('value="bad-ip"');
    expect(await listKeys()).toEqual(before);
  });

  it('rotates (both values work) and revokes (401 after) through the same rules as the API', async () => {
    const s = await session('owner');
    const created = revealed((await postForm(s, pagePath('keys'), [['name', 'to-rotate'], ['scopes', 'inference']])).html);
    const id = (await listKeys()).find((k) => k.name === 'to-rotate')?.id ?? '';
    const rotated = await postForm(s, `${pagePath('keys')}/${id}/rotate`, []);
    expect(rotated.status).toBe(200);
    const next = revealed(rotated.html);
    expect(next).not.toBe(created);
    expect((await chat(created)).status).toBe(200);
    expect((await chat(next)).status).toBe(200);
    expect((await postForm(s, `${pagePath('keys')}/${id}/revoke`, [])).status).toBe(200);
    expect((await chat(next)).status).toBe(401);
    const again = await postForm(s, `${pagePath('keys')}/${id}/rotate`, []);
    expect(again.status).toBe(409);
    expect(again.html).toContain('only an active key can be rotated');
  });
});

describe('dashboard pages: semantic router', () => {
  it('saves a rule edit that the management API then returns', async () => {
    const created = await call(mgmt('semantic-router/rules'), { key: suite.keys.full, body: { name: 'before', query_contains: ['python'], endpoint_id: CHAT_ID } });
    expect(created.status).toBe(201);
    const ruleId = (created.body as { id: string }).id;
    const s = await session('admin');
    const editor = await getPage(s, `${pagePath('router/rules')}/${ruleId}`);
    expect(editor.status).toBe(200);
    expect(editor.html).toContain('value="before"');
    const saved = await postForm(s, `${pagePath('router/rules')}/${ruleId}`, [
      ['name', 'after'],
      ['query_contains', 'python\nrust'],
      ['endpoint_id', REASONER_ID],
      ['priority', '7'],
      ['fallback_to_classification', 'on'],
      ['enabled', 'on'],
    ]);
    expect(saved.status, saved.html.slice(0, 400)).toBe(200);
    const rules = (await call(mgmt('semantic-router/rules'), { key: suite.keys.full })).body as { data: Record<string, unknown>[] };
    expect(rules.data.find((r) => r.id === ruleId)).toEqual({
      id: ruleId,
      name: 'after',
      match: { query_contains: ['python', 'rust'], min_input_tokens: null, exact_request_model: null },
      action: { endpoint_id: REASONER_ID, fallback_to_classification: true },
      priority: 7,
      enabled: true,
    });
  });

  it('refuses an out-of-range setting with the PATCH route\'s own message and status, changing nothing', async () => {
    const s = await session('owner');
    const before = (await call(mgmt('semantic-router/config'), { key: suite.keys.full })).body as { preferences: Record<string, unknown> };
    const api = await call(mgmt('semantic-router/config'), { method: 'PATCH', key: suite.keys.full, body: { semantic_router_similarity_floor: 1.5 } });
    expect(api.status).toBe(400);
    const message = (api.body as { error: { message: string } }).error.message;
    const page = await postForm(s, pagePath('router/settings'), [['semantic_router_similarity_floor', '1.5']]);
    expect(page.status).toBe(400);
    expect(page.html).toContain(message.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;'));
    const after = (await call(mgmt('semantic-router/config'), { key: suite.keys.full })).body as { preferences: Record<string, unknown> };
    expect(after.preferences).toEqual(before.preferences);
  });

  it('shows a decision with its decrypted excerpt, escaped, and hides it from a user who cannot read its workspace', async () => {
    const rule = await call(mgmt('semantic-router/rules'), { key: suite.keys.full, body: { name: 'marker', query_contains: ['excerpt-marker'], endpoint_id: CHAT_ID } });
    expect(rule.status).toBe(201);
    const routed = await call(`${suite.gw.url}/${PROJECT}/_semantic/router/v1/chat/completions`, {
      key: suite.keys.full,
      body: { model: 'm', messages: [{ role: 'user', content: 'an excerpt-marker <b>here</b>' }], max_tokens: 8 },
    });
    expect(routed.status, JSON.stringify(routed.body)).toBe(200);
    const page = await getPage(await session('member'), pagePath('router'));
    expect(page.status).toBe(200);
    expect(page.html).toContain('Health (last 24 hours)');
    expect(page.html).toContain('an excerpt-marker &lt;b&gt;here&lt;/b&gt;');
    const narrow = await getPage(await session('member', [WS_B]), pagePath('router'));
    expect(narrow.html).not.toContain('an excerpt-marker &lt;b&gt;here');
    expect(narrow.html).toContain('hidden: a workspace you cannot read');
  });
});

describe('dashboard pages: usage and webhooks', () => {
  it('charts usage per day and per endpoint as inline SVG', async () => {
    const key = revealed((await postForm(await session('admin'), pagePath('keys'), [['name', 'usage'], ['scopes', 'inference']])).html);
    expect((await chat(key)).status).toBe(200);
    const page = await getPage(await session('member'), pagePath('usage'));
    expect(page.status).toBe(200);
    expect(page.html).toContain('<svg');
    expect(page.html).toContain('Requests per endpoint');
    expect(page.html).toMatch(/<title>Test chat \(chat\): \d+<\/title>/);
  });

  it('refuses a plain-http webhook URL with the API schema\'s words', async () => {
    const s = await session('admin');
    const page = await postForm(s, pagePath('webhooks'), [['url', 'http://hooks.example.com/x'], ['events', 'exec.completed']]);
    expect(page.status).toBe(400);
    expect(page.html).toContain('class="notice error"');
    const list = await call(`${suite.gw.url}/${PROJECT}/v1/webhooks`, { key: suite.keys.full });
    expect((list.body as { data: unknown[] }).data).toEqual([]);
  });
});
