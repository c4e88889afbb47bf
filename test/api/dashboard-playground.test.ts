/**
 * The dashboard's chat playground over HTTP (issue 23): the page, and its turn route, which runs a turn
 * through the API's own chat use cases as the signed-in user and streams it back with the routing decision,
 * the usage and the harness features that acted. Real gateway and simulator processes; the simulator's
 * request log is the proof of what reached the model, the store's usage ledger of what was billed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONTENT_TOKENS } from '../../src/simulator/chat-completion.js';
import { PROJECT, WS_DEFAULT } from '../helpers/configs.js';
import { call } from '../helpers/http.js';
import { R_CHAT, ROUTER_PROJECT, WS_MAIN, WS_SOLO, useRouterSuite } from '../helpers/router-config.js';
import { simRequests, simSeq, type SimRequest } from '../helpers/simulator-log.js';
import { parseSse, type SseFrame } from '../helpers/sse.js';
import { openUsageDb, type UsageDb } from '../helpers/usage-db.js';
import { signInAs, type DashboardSession } from './dashboard-pages-session.js';

// proj_test's ceiling: 4 a minute + 50% burst, floored at 10 for a paid project (SPEC Limits 2).
const suite = useRouterSuite({ rateLimit: { requests_per_minute: 4 } });
const MATH_Q = 'compute the derivative of sin x';
let owner: DashboardSession;
let member: DashboardSession;
let confined: DashboardSession;
let usage: UsageDb;

beforeAll(async () => {
  owner = await signInAs(suite.gw, { email: 'playground-owner@example.com', projectId: ROUTER_PROJECT, role: 'owner' });
  // Members may use the playground: it is inference, not configuration.
  member = await signInAs(suite.gw, { email: 'playground-member@example.com', projectId: PROJECT, role: 'member' });
  confined = await signInAs(suite.gw, { email: 'playground-confined@example.com', projectId: ROUTER_PROJECT, role: 'member', workspaceIds: [WS_SOLO] });
  usage = openUsageDb(suite.gw.dbPath);
});

afterAll(() => usage?.close());

const turnUrl = (project: string): string => `${suite.gw.url}/dashboard/projects/${project}/playground/turn`;

interface Turn {
  readonly status: number;
  readonly headers: Headers;
  readonly frames: SseFrame[];
  readonly body: Record<string, unknown> | null;
}

async function sendTurn(who: DashboardSession, turn: Record<string, unknown>, opts: { project?: string; csrf?: string | null } = {}): Promise<Turn> {
  const headers: Record<string, string> = { cookie: who.cookie, 'content-type': 'application/json', origin: suite.gw.url };
  const csrf = opts.csrf === undefined ? who.csrf : opts.csrf;
  if (csrf !== null) headers['x-csrf-token'] = csrf;
  const res = await fetch(turnUrl(opts.project ?? ROUTER_PROJECT), { method: 'POST', headers, body: JSON.stringify(turn) });
  const text = await res.text();
  const streamed = (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
  return { status: res.status, headers: res.headers, frames: streamed ? parseSse(text) : [], body: streamed ? null : (JSON.parse(text) as Record<string, unknown>) };
}

const routed = (content: string, extra: Record<string, unknown> = {}) => ({ target: { kind: 'router' }, workspace: WS_MAIN, messages: [{ role: 'user', content }], ...extra });
const direct = (endpoint: string, extra: Record<string, unknown> = {}) => ({ target: { kind: 'endpoint', endpoint }, workspace: WS_MAIN, messages: [{ role: 'user', content: 'hello there' }], ...extra });

const eventOf = (t: Turn, name: string): Record<string, unknown> | undefined => {
  const f = t.frames.find((x) => x.event === name);
  return f ? (JSON.parse(f.data) as Record<string, unknown>) : undefined;
};
const chunks = (t: Turn): Record<string, unknown>[] => t.frames.filter((f) => f.event === null && f.data !== '[DONE]').map((f) => JSON.parse(f.data) as Record<string, unknown>);
const answerText = (t: Turn): string =>
  chunks(t)
    .map((c) => ((c.choices as { delta?: { content?: string } }[] | undefined)?.[0]?.delta?.content ?? ''))
    .join('');

/** The chat requests the simulator received after `seq`. */
async function chatCallsSince(seq: number): Promise<SimRequest[]> {
  return (await simRequests(suite.sim.url, 50)).filter((r) => r.seq > seq && r.path === '/v1/chat/completions');
}

describe('the playground page', () => {
  it('is a tab of the project, runs our one script under a CSP that allows only our own', async () => {
    const res = await fetch(`${suite.gw.url}/dashboard/projects/${ROUTER_PROJECT}/playground`, { headers: { cookie: owner.cookie } });
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain(`href="/dashboard/projects/${ROUTER_PROJECT}/playground" class="current"`);
    expect(page).toContain('<script src="/dashboard/assets/playground.js" defer></script>');
    expect(page).not.toMatch(/<script>/);
    expect(page).toContain('<option value="router">Semantic router</option>');
    expect(page).toContain('<option value="endpoint:math">');
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    // Only this page widens it: another page keeps no script at all.
    const keys = await fetch(`${suite.gw.url}/dashboard/projects/${ROUTER_PROJECT}/keys`, { headers: { cookie: owner.cookie } });
    expect(keys.headers.get('content-security-policy')).not.toContain('script-src');
    const script = await fetch(`${suite.gw.url}/dashboard/assets/playground.js`);
    expect(script.headers.get('content-type')).toContain('text/javascript');
    expect(await script.text()).toContain('x-csrf-token');
  });

  it('lists only the workspaces the user reads and is 404 in a project the user has no role in', async () => {
    const page = await (await fetch(`${suite.gw.url}/dashboard/projects/${ROUTER_PROJECT}/playground`, { headers: { cookie: confined.cookie } })).text();
    expect(page).toContain(`<option value="${WS_SOLO}"`);
    expect(page).not.toContain(`<option value="${WS_MAIN}"`);
    const other = await fetch(`${suite.gw.url}/dashboard/projects/${PROJECT}/playground`, { headers: { cookie: confined.cookie } });
    expect(other.status).toBe(404);
  });
});

describe('a playground turn', () => {
  it('streams a routed turn with its decision, usage and the harness, and bills it to the user', async () => {
    const t = await sendTurn(owner, routed(MATH_Q));
    expect(t.status).toBe(200);
    expect(t.headers.get('x-service-routed-endpoint')).toBe('math');
    expect(t.frames.map((f) => f.event).slice(0, 3)).toEqual(['turn', 'decision', 'harness']);
    expect(t.frames.at(-1)?.data).toBe('[DONE]');
    const turn = eventOf(t, 'turn');
    expect(turn).toMatchObject({ target: 'router', endpoint: 'math', model: 'model-math', workspace: WS_MAIN });
    const decision = eventOf(t, 'decision');
    expect(decision).toMatchObject({ endpoint: 'math', rule_id: null });
    expect(typeof decision?.score).toBe('number');
    expect(typeof decision?.reason).toBe('string');
    expect(chunks(t).length).toBeGreaterThan(2);
    // The simulator's default answer: 16 one-token words.
    expect(answerText(t).split(' ')).toHaveLength(DEFAULT_CONTENT_TOKENS);
    const last = chunks(t).at(-1) as { usage?: { total_tokens: number } };
    expect(last.usage?.total_tokens).toBe(27);
    const requestId = String(turn?.request_id);
    expect(chunks(t)[0]?.id).toBe(requestId);
    const row = await usage.waitForRow(requestId);
    expect(row).toMatchObject({ project_id: ROUTER_PROJECT, workspace_id: WS_MAIN, key_id: owner.userId, route: 'router', status: 'completed' });
    // The decision row names the surface: a playground turn is not API traffic.
    const decisions = await call(`${suite.base}/v1/management/semantic-router/decisions?limit=100`, { key: suite.keys.full });
    const mine = (decisions.body as { data: { decision_request_id: string; client_mode: string }[] }).data.find((d) => d.decision_request_id === requestId);
    expect(mine?.client_mode).toBe('dashboard');
  });

  it('reports the rule that decided a routed turn', async () => {
    const created = await call(`${suite.base}/v1/management/semantic-router/rules`, {
      key: suite.keys.full,
      body: { name: 'playground rule', query_contains: ['zebra-crossing'], endpoint_id: R_CHAT },
    });
    expect(created.status).toBe(201);
    const ruleId = (created.body as { id: string }).id;
    const t = await sendTurn(owner, routed(`${MATH_Q} zebra-crossing`));
    expect(t.status).toBe(200);
    expect(eventOf(t, 'decision')).toMatchObject({ endpoint: 'chat', rule_id: ruleId, score: null });
  });

  it('runs a direct endpoint turn without a routing decision, on the chat route label', async () => {
    const t = await sendTurn(owner, direct('math'));
    expect(t.status).toBe(200);
    expect(eventOf(t, 'turn')).toMatchObject({ target: 'endpoint', endpoint: 'math', model: 'model-math' });
    expect(eventOf(t, 'decision')).toBeUndefined();
    expect(t.frames.at(-1)?.data).toBe('[DONE]');
    const row = await usage.waitForRow(String(eventOf(t, 'turn')?.request_id));
    expect(row).toMatchObject({ key_id: owner.userId, route: 'chat' });
  });

  it('has the harness on by default, and its switches reach the model as the headers would', async () => {
    // max_tokens below the floor: the max-tokens floor (on by default here) raises it.
    let seq = await simSeq(suite.sim.url);
    const byDefault = await sendTurn(owner, direct('math', { max_tokens: 5 }));
    expect(eventOf(byDefault, 'harness')).toMatchObject({ acted: ['max-tokens-floor'] });
    expect((eventOf(byDefault, 'harness')?.enabled as string[]).includes('tool-top-k')).toBe(false);
    expect(JSON.parse((await chatCallsSince(seq))[0]?.body ?? '{}')).toMatchObject({ max_tokens: 256, stream: true });

    seq = await simSeq(suite.sim.url);
    const featureOff = await sendTurn(owner, direct('math', { max_tokens: 5, harness: { features: { maxTokensFloor: false } } }));
    expect(eventOf(featureOff, 'harness')).toMatchObject({ acted: [] });
    expect(JSON.parse((await chatCallsSince(seq))[0]?.body ?? '{}')).toMatchObject({ max_tokens: 5 });

    seq = await simSeq(suite.sim.url);
    const allOff = await sendTurn(owner, direct('math', { max_tokens: 5, harness: { augment: false } }));
    expect(eventOf(allOff, 'harness')).toMatchObject({ acted: [], enabled: ['media-url-resolution'] });
    expect(JSON.parse((await chatCallsSince(seq))[0]?.body ?? '{}')).toMatchObject({ max_tokens: 5 });

    // A feature's own switch wins over X-Service-Augment: off (SPEC Passthrough 2).
    seq = await simSeq(suite.sim.url);
    const onlyFloor = await sendTurn(owner, direct('math', { max_tokens: 5, harness: { augment: false, features: { maxTokensFloor: true } } }));
    expect(eventOf(onlyFloor, 'harness')).toMatchObject({ acted: ['max-tokens-floor'] });
    expect(JSON.parse((await chatCallsSince(seq))[0]?.body ?? '{}')).toMatchObject({ max_tokens: 256 });
  });

  it('refuses a turn without the CSRF token, and nothing reaches the model', async () => {
    const seq = await simSeq(suite.sim.url);
    const missing = await sendTurn(owner, routed(MATH_Q), { csrf: null });
    expect(missing.status).toBe(403);
    expect(missing.body).toMatchObject({ error: { code: 'csrf_token_invalid' } });
    const wrong = await sendTurn(owner, routed(MATH_Q), { csrf: 'not-the-token' });
    expect(wrong.status).toBe(403);
    expect(await simSeq(suite.sim.url)).toBe(seq);
  });

  it('is 401 without a session', async () => {
    const res = await fetch(turnUrl(ROUTER_PROJECT), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(routed(MATH_Q)) });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: { code: 'session_required' } });
  });

  it("is 404 in another project's playground", async () => {
    const t = await sendTurn(confined, direct('chat', { workspace: WS_DEFAULT }), { project: PROJECT });
    expect(t.status).toBe(404);
    expect(t.body).toMatchObject({ error: { code: 'not_found' } });
  });

  it('refuses a workspace the user cannot read with the API\'s 403', async () => {
    const seq = await simSeq(suite.sim.url);
    const t = await sendTurn(confined, routed(MATH_Q));
    expect(t.status).toBe(403);
    expect(t.body).toMatchObject({ error: { code: 'workspace_not_allowed' } });
    expect(await simSeq(suite.sim.url)).toBe(seq);
    // Its own workspace works.
    const own = await sendTurn(confined, routed(MATH_Q, { workspace: WS_SOLO }));
    expect(own.status).toBe(200);
    expect(eventOf(own, 'turn')).toMatchObject({ endpoint: 'solo', workspace: WS_SOLO });
  });

  it('refuses a malformed turn with the field named', async () => {
    const t = await sendTurn(owner, { target: { kind: 'router' }, messages: [{ role: 'tool', content: 'x' }] });
    expect(t.status).toBe(400);
    expect(t.body).toMatchObject({ error: { code: 'invalid_request', param: 'messages[0].role' } });
  });

  it("counts against the project's request limit: 429 in the API's envelope once the ceiling is spent", async () => {
    const turn = { target: { kind: 'endpoint', endpoint: 'chat' }, workspace: WS_DEFAULT, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 };
    const statuses: number[] = [];
    let refused: Turn | null = null;
    for (let i = 0; i < 12 && refused === null; i += 1) {
      const t = await sendTurn(member, turn, { project: PROJECT });
      statuses.push(t.status);
      if (t.status === 429) refused = t;
    }
    expect(statuses).toEqual([...Array<number>(10).fill(200), 429]);
    expect(refused?.body).toMatchObject({ error: { code: 'rate_limit_exceeded', type: 'rate_limit_error' } });
    expect(Number((refused?.body?.error as { retry_after?: number }).retry_after)).toBeGreaterThan(0);
    expect(refused?.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused?.headers.get('ratelimit-remaining')).toBe('0');
  });
});
