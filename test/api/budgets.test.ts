/**
 * Token budgets per endpoint and per workspace (SPEC "Errors": endpoint_budget_exhausted,
 * workspace_budget_exhausted; docs/decisions.md "Budgets") over HTTP: caps from the config file and from
 * the management API, the 80% warning header, the 429 once spent, window resets with the controllable
 * clock, and spend rebuilt from the usage ledger after a restart.
 *
 * Token counts are exact: the simulator bills ceil(bytes / 4) + 3 prompt tokens for one message and
 * `suite.sim.tokens` completion tokens, so a turn on "hi" costs 4 + N tokens.
 */
import { describe, expect, it } from 'vitest';
import { CHAT_ID, PLAIN_ID, PROJECT, WS_B, WS_DEFAULT } from '../helpers/configs.js';
import { advanceClock, call, errorOf, expectError, type JsonResponse } from '../helpers/http.js';
import { startGatewayProcess } from '../helpers/processes.js';
import { useGatewaySuite } from '../helpers/suite.js';

const suite = useGatewaySuite({
    limits: { management_requests_per_minute: 100_000 },
    budgets: { endpoints: { chat: { hourly_tokens: 100 } } },
  });

const HOUR_MS = 3_600_000;
const budgetsUrl = (path = '', base = suite.gw.url): string => `${base}/${PROJECT}/v1/management/budgets${path}`;

/** One turn costing exactly `tokens` (at least 4) on endpoint `slug`. */
function turn(slug: string, tokens: number, base = suite.gw.url, headers: Record<string, string> = {}): Promise<JsonResponse> {
  return call(`${base}/${PROJECT}/${slug}/v1/chat/completions`, {
    key: suite.keys.full,
    headers,
    body: { model: 'm', messages: [{ role: 'user', content: 'hi' }], sim: { tokens: tokens - 4 } },
  });
}

const warning = (res: JsonResponse): string | null => res.headers.get('x-service-budget-warning');

function expectBudgetRefusal(res: JsonResponse, code: string): number {
  const error = errorOf(res);
  expect({ status: res.status, code: error.code, param: error.param, type: error.type }).toEqual({ status: 429, code, param: null, type: 'rate_limit_error' });
  expect(Number.isInteger(error.retry_after)).toBe(true);
  expect(res.headers.get('retry-after')).toBe(String(error.retry_after));
  expect(error.retry_strategy).toMatchObject({ type: 'fixed', initial_delay_ms: (error.retry_after as number) * 1000 });
  return error.retry_after as number;
}

interface BudgetWire {
  object: string;
  level: string;
  target_id: string;
  hourly_tokens: number | null;
  daily_tokens: number | null;
  hard_cap_tokens: number | null;
  source: string | null;
  spent: { hourly_tokens: number; daily_tokens: number; total_tokens: number };
  warning_windows: string[];
  exhausted_windows: string[];
}

describe('an endpoint budget from the config file', () => {
  it('warns from 80% of the cap, refuses once it is spent, and resets with the hour', async () => {
    // Start on a fresh UTC hour, so the hourly window cannot roll over mid-test.
    const now = await advanceClock(suite.gw.url, 0);
    await advanceClock(suite.gw.url, HOUR_MS - (now % HOUR_MS) + 1000);

    const first = await turn('chat', 80);
    expect(first.status).toBe(200);
    expect(warning(first)).toBeNull();
    const second = await turn('chat', 10);
    expect(second.status).toBe(200);
    expect(warning(second)).toBe('endpoint:hourly');
    // Charged after the turn: this one starts at 90 and ends at 110, over the cap.
    expect((await turn('chat', 20)).status).toBe(200);
    const refused = await turn('chat', 10);
    const retryAfter = expectBudgetRefusal(refused, 'endpoint_budget_exhausted');
    expect(retryAfter).toBeGreaterThan(3500);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    // SPEC: the warning means "the request was served in full"; a refusal does not carry it.
    expect(warning(refused)).toBeNull();
    // Other endpoints of the project are not affected.
    expect(warning(await turn('plain', 10))).toBeNull();

    const status = (await call(budgetsUrl(`/endpoints/${CHAT_ID}`), { key: suite.keys.full })).body as BudgetWire;
    expect(status).toMatchObject({
      object: 'budget',
      level: 'endpoint',
      target_id: CHAT_ID,
      hourly_tokens: 100,
      daily_tokens: null,
      hard_cap_tokens: null,
      source: 'config',
      spent: { hourly_tokens: 110, daily_tokens: 110, total_tokens: 110 },
      warning_windows: ['hourly'],
      exhausted_windows: ['hourly'],
    });

    await advanceClock(suite.gw.url, retryAfter * 1000);
    const next = await turn('chat', 10);
    expect(next.status).toBe(200);
    expect(warning(next)).toBeNull();
  });
});

describe('a workspace budget set through the management API', () => {
  it('applies at once, warns, refuses with workspace_budget_exhausted, and DELETE restores the file\'s (none)', async () => {
    const put = await call(budgetsUrl(`/workspaces/${WS_B}`), { method: 'PUT', key: suite.keys.full, body: { daily_tokens: 50 } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ level: 'workspace', target_id: WS_B, daily_tokens: 50, hourly_tokens: null, source: 'api' });

    expect(warning(await turn('b-only', 40))).toBeNull();
    const warned = await turn('b-only', 10);
    expect(warned.status).toBe(200);
    expect(warning(warned)).toBe('workspace:daily');
    // The same workspace through another endpoint draws on the same budget.
    expectBudgetRefusal(await turn('plain', 10, suite.gw.url, { 'x-workspace-id': WS_B }), 'workspace_budget_exhausted');
    expectBudgetRefusal(await turn('b-only', 10), 'workspace_budget_exhausted');
    // Other workspaces are not affected.
    expect((await turn('plain', 10, suite.gw.url, { 'x-workspace-id': WS_DEFAULT })).status).toBe(200);

    const del = await call(budgetsUrl(`/workspaces/${WS_B}`), { method: 'DELETE', key: suite.keys.full });
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ daily_tokens: null, source: null, spent: { daily_tokens: 50 } });
    expect((await turn('b-only', 10)).status).toBe(200);
  });

  it('lets a PUT with no caps override a budget of the config file', async () => {
    await advanceClock(suite.gw.url, HOUR_MS);
    const url = budgetsUrl(`/endpoints/${CHAT_ID}`);
    const put = await call(url, { method: 'PUT', key: suite.keys.full, body: {} });
    expect(put.body).toMatchObject({ hourly_tokens: null, source: 'api' });
    expect((await turn('chat', 150)).status).toBe(200);
    expect((await turn('chat', 10)).status).toBe(200);
    const restored = await call(url, { method: 'DELETE', key: suite.keys.full });
    expect(restored.body).toMatchObject({ hourly_tokens: 100, source: 'config', exhausted_windows: ['hourly'] });
    expectBudgetRefusal(await turn('chat', 10), 'endpoint_budget_exhausted');
  });

  it('lists every endpoint and workspace of the project with its budget and spend', async () => {
    const res = await call(budgetsUrl(), { key: suite.keys.managementOnly });
    expect(res.status).toBe(200);
    const list = res.body as { object: string; data: BudgetWire[] };
    expect(list.object).toBe('list');
    expect(list.data.filter((b) => b.level === 'workspace').map((b) => b.target_id).sort()).toEqual([WS_DEFAULT, WS_B, 'ws_0c0c0c'].sort());
    expect(list.data.find((b) => b.target_id === CHAT_ID)).toMatchObject({ hourly_tokens: 100, source: 'config' });
    expect(list.data.find((b) => b.target_id === PLAIN_ID)).toMatchObject({ hourly_tokens: null, source: null });
  });

  it.each<[string, string, unknown, number, string, string | null]>([
    ['a cap of 0', `/endpoints/${PLAIN_ID}`, { hourly_tokens: 0 }, 400, 'invalid_request', 'hourly_tokens'],
    ['a fractional cap', `/endpoints/${PLAIN_ID}`, { daily_tokens: 2.5 }, 400, 'invalid_request', 'daily_tokens'],
    ['an unknown field', `/endpoints/${PLAIN_ID}`, { monthly_tokens: 5 }, 400, 'invalid_request', 'monthly_tokens'],
    ['a money cap of 0 cents', `/endpoints/${PLAIN_ID}`, { hourly_cents: 0 }, 400, 'invalid_request', 'hourly_cents'],
    ['a money cap on an endpoint without prices (never reached: its turns cost nothing)', `/endpoints/${PLAIN_ID}`, { daily_tokens: 5, hard_cap_cents: 100 }, 400, 'invalid_request', 'hard_cap_cents'],
    ['an unknown endpoint', '/endpoints/aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', {}, 404, 'endpoint_not_found', null],
    ['a workspace id that is not ws_<hex>', '/workspaces/default', {}, 400, 'invalid_workspace_id', 'workspace_id'],
    ['an unknown workspace', '/workspaces/ws_0fff', {}, 404, 'workspace_not_found', 'workspace_id'],
  ])('refuses %s', async (_what, path, body, status, code, param) => {
    expectError(await call(budgetsUrl(path), { method: 'PUT', key: suite.keys.full, body: body as object }), status, code, param);
  });

  it('sets and shows money caps (US cents) beside token caps, with spend in cents', async () => {
    const url = budgetsUrl(`/workspaces/${WS_B}`);
    const put = await call(url, { method: 'PUT', key: suite.keys.full, body: { daily_tokens: 1000, daily_cents: 250, hard_cap_cents: 10_000 } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ daily_tokens: 1000, hourly_cents: null, daily_cents: 250, hard_cap_cents: 10_000, source: 'api', spent: { daily_cents: 0 } });
    const listed = (await call(budgetsUrl(), { key: suite.keys.full })).body as { data: Record<string, unknown>[] };
    expect(listed.data.find((b) => b.target_id === WS_B)).toMatchObject({ daily_cents: 250 });
    await call(url, { method: 'DELETE', key: suite.keys.full });
  });

  it('needs the management scope', async () => {
    expectError(await call(budgetsUrl(), { key: suite.keys.inferenceOnly }), 403, 'scope_insufficient');
    expectError(await call(budgetsUrl(`/endpoints/${PLAIN_ID}`), { method: 'PUT', key: suite.keys.inferenceOnly, body: {} }), 403, 'scope_insufficient');
  });
});

describe('durability', () => {
  // Its own gateway, whose clock is never moved: a restarted process starts from the real time again.
  it('keeps API budgets and rebuilds spend from the usage ledger after a restart', async () => {
    let fresh = await startGatewayProcess(suite.config);
    try {
      const put = await call(budgetsUrl(`/endpoints/${PLAIN_ID}`, fresh.url), { method: 'PUT', key: suite.keys.full, body: { hard_cap_tokens: 30 } });
      expect(put.status).toBe(200);
      expect((await turn('plain', 34, fresh.url)).status).toBe(200);
      const refused = await turn('plain', 10, fresh.url);
      expect(expectBudgetRefusal(refused, 'endpoint_budget_exhausted')).toBe(3600);
      expect(warning(refused)).toBeNull();

      expect(await fresh.stop()).toBe(0);
      fresh = await startGatewayProcess(suite.config, { dbPath: fresh.dbPath });

      expectBudgetRefusal(await turn('plain', 10, fresh.url), 'endpoint_budget_exhausted');
      const status = (await call(budgetsUrl(`/endpoints/${PLAIN_ID}`, fresh.url), { key: suite.keys.full })).body as BudgetWire;
      expect(status).toMatchObject({ hard_cap_tokens: 30, source: 'api', spent: { total_tokens: 34 }, exhausted_windows: ['hardCap'] });
    } finally {
      await fresh.stop();
    }
  });
});
