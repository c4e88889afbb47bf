/**
 * Usage and spend over HTTP and from the CLI (README "Usage and spend"): a known load of chat turns on two
 * priced endpoints and one unpriced one, over two UTC days, then the totals of
 * `GET /{project}/v1/management/usage` per endpoint, day, key, workspace and model, their pagination and
 * their parameter errors; `switchboard usage` printing the same totals; and a money budget that trips,
 * with a budget alert carrying the real spend in cents.
 *
 * Token counts are exact: the simulator bills ceil(bytes / 4) + 3 prompt tokens for one message ("hi": 4)
 * and `sim.tokens` completion tokens. Costs are worked out by hand below, in nano-dollars, from the prices.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/db.js';
import { markStoreKind } from '../../src/store/store-kind-mark.js';
import { CHAT_ID, makeKeys, PLAIN_ID, PROJECT, REASONER_ID, SMALL_ID, testConfig, WS_B, WS_DEFAULT } from '../helpers/configs.js';
import { advanceClock, call, errorOf, expectError, type JsonResponse } from '../helpers/http.js';
import { runCli, startGatewayProcess, startSimulatorProcess, tempDir, writeConfig } from '../helpers/processes.js';
import { useProcesses } from '../helpers/suite.js';
import { openUsageDb, type UsageDb } from '../helpers/usage-db.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const DAY_MS = 86_400_000;

/** USD per million tokens. chat: 2 in, 1 cached, 8 out; plain: 0.5 in, 1.5 out; small: 1000 both (0.1 cent a token). */
const PRICES: Record<string, Record<string, number | string>> = {
  chat: { input_per_million: 2, cached_input_per_million: '1', output_per_million: 8 },
  plain: { input_per_million: 0.5, output_per_million: '1.5' },
  small: { input_per_million: 1000, output_per_million: 1000 },
};

const suite = useProcesses(async () => {
  const keys = makeKeys();
  const sim = await startSimulatorProcess();
  const base = testConfig(sim.url, keys, {
    limits: { management_requests_per_minute: 1000 },
    security: { allow_private_targets: true, allow_http_targets: true },
    webhooks: { poll_interval_ms: 50 },
  });
  const [project, ...others] = base.projects;
  const config = {
    ...base,
    projects: [
      {
        ...project,
        endpoints: project?.endpoints.map((e) => {
          const prices = PRICES[e.slug];
          const budget = e.slug === 'small' ? { hard_cap_cents: 5 } : undefined;
          return { ...e, ...(prices ? { prices } : {}), ...(budget ? { budget } : {}) };
        }),
      },
      ...others,
    ],
  };
  const gw = await startGatewayProcess(config);
  return { sim, gw, keys, config };
});

let usageDb: UsageDb | null = null;
const ledger = (): UsageDb => (usageDb ??= openUsageDb(suite.gw.dbPath));
afterAll(() => usageDb?.close());

function turn(slug: string, key: string, extra: Record<string, unknown>, headers: Record<string, string> = {}): Promise<JsonResponse> {
  return call(`${suite.gw.url}/${PROJECT}/${slug}/v1/chat/completions`, {
    key,
    headers,
    body: { model: 'm', messages: [{ role: 'user', content: 'hi' }], ...extra },
  });
}

function usage(query: string, key = suite.keys.full): Promise<JsonResponse> {
  return call(`${suite.gw.url}/${PROJECT}/v1/management/usage${query ? `?${query}` : ''}`, { key });
}

interface Result {
  object: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  cost_usd: string | null;
  unpriced_requests: number;
  [group: string]: unknown;
}
interface Page {
  object: string;
  group_by: string;
  start_time: number;
  end_time: number;
  data: Result[];
  has_more: boolean;
}

const totals = (requests: number, prompt: number, completion: number, cached: number, reasoning: number, cost: string | null, unpriced = 0) => ({
  object: 'usage.result',
  requests,
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
  cached_tokens: cached,
  reasoning_tokens: reasoning,
  cost_usd: cost,
  unpriced_requests: unpriced,
});

/**
 * The load, and what each turn costs (pico-dollars per token: chat 2e6 in, 1e6 cached, 8e6 out; plain
 * 0.5e6 in, 1.5e6 out; a nano-dollar is 1000 pico-dollars):
 *   day A  1. chat,     full key,      default ws, 10 out           4 x 2e6 + 10 x 8e6            = 88,000 n$
 *          2. chat,     full key,      flex (0.5x), 6 out, 2 cached  (2 x 2e6 + 2 x 1e6 + 6 x 8e6) / 2 = 27,000 n$
 *          3. plain,    inference key, 20 out                        4 x 0.5e6 + 20 x 1.5e6        = 32,000 n$
 *          4. chat,     inference key, ws B, priority (1.25x), 4 out (4 x 2e6 + 4 x 8e6) x 1.25    = 50,000 n$
 *   day B  5. plain,    full key,      8 out                         4 x 0.5e6 + 8 x 1.5e6         = 14,000 n$
 *          6. reasoner, full key,      5 + 3 reasoning out           unpriced
 */
describe('GET /{project}/v1/management/usage after a known load', () => {
  let dayA = 0;
  let dayB = 0;
  let range = '';

  it('records each turn with its model and exact cost', async () => {
    // 01:00 UTC on a fresh day, so that both days' turns stay inside their day.
    const now = await advanceClock(suite.gw.url, 0);
    dayA = Math.floor(now / DAY_MS) * DAY_MS + DAY_MS;
    await advanceClock(suite.gw.url, dayA + 3_600_000 - now);
    const { full, inferenceOnly } = suite.keys;
    const responses = [
      await turn('chat', full, { sim: { tokens: 10 } }),
      await turn('chat', full, { service_tier: 'flex', sim: { tokens: 6, cached_tokens: 2 } }),
      await turn('plain', inferenceOnly, { sim: { tokens: 20 } }),
      await turn('chat', inferenceOnly, { service_tier: 'priority', sim: { tokens: 4 } }, { 'x-workspace-id': WS_B }),
    ];
    // A day and a minute later: day B, and out of a default 24-hour range that ends now.
    await advanceClock(suite.gw.url, DAY_MS + 60_000);
    dayB = dayA + DAY_MS;
    responses.push(await turn('plain', full, { sim: { tokens: 8 } }), await turn('reasoner', full, { sim: { tokens: 5, reasoning_tokens: 3 } }));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    range = `start_time=${dayA / 1000}&end_time=${(dayB + DAY_MS) / 1000}`;

    expect(await ledger().waitForCount(6)).toBe(6);
    const rows = ledger().recent(6).reverse() as unknown as Record<string, unknown>[];
    expect(rows.map((r) => [r.endpoint_id, r.model, r.tier_multiplier, r.cost_nanos])).toEqual([
      [CHAT_ID, 'model-chat', 1, 88_000],
      [CHAT_ID, 'model-chat', 0.5, 27_000],
      [PLAIN_ID, 'model-plain', 1, 32_000],
      [CHAT_ID, 'model-chat', 1.25, 50_000],
      [PLAIN_ID, 'model-plain', 1, 14_000],
      [REASONER_ID, 'acme/model-reasoner', 1, null],
    ]);
  });

  it('totals per endpoint: requests, tokens and cost, the flex turn at half price and the priority one at 1.25x', async () => {
    const res = await usage(`${range}&group_by=endpoint`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      object: 'list',
      group_by: 'endpoint',
      start_time: dayA / 1000,
      end_time: (dayB + DAY_MS) / 1000,
      data: [
        { endpoint_id: CHAT_ID, ...totals(3, 12, 20, 2, 0, '0.000165') },
        { endpoint_id: REASONER_ID, ...totals(1, 4, 8, 0, 3, null, 1) },
        { endpoint_id: PLAIN_ID, ...totals(2, 8, 28, 0, 0, '0.000046') },
      ],
      has_more: false,
    });
  });

  it('totals per UTC day, with the day\'s bounds in Unix seconds', async () => {
    const body = (await usage(`${range}&group_by=day`)).body as Page;
    expect(body.data).toEqual([
      { start_time: dayA / 1000, end_time: dayB / 1000, ...totals(4, 16, 40, 2, 0, '0.000197') },
      { start_time: dayB / 1000, end_time: (dayB + DAY_MS) / 1000, ...totals(2, 8, 16, 0, 3, '0.000014', 1) },
    ]);
  });

  it('totals per key, workspace and model', async () => {
    const fullId = ledger().keyIdFor(suite.keys.full);
    const inferenceId = ledger().keyIdFor(suite.keys.inferenceOnly);
    const byKey = ((await usage(`${range}&group_by=key`)).body as Page).data;
    const expected = new Map([
      [fullId, totals(4, 16, 32, 2, 3, '0.000129', 1)],
      [inferenceId, totals(2, 8, 24, 0, 0, '0.000082')],
    ]);
    expect(byKey.map((r) => r.api_key_id)).toEqual([fullId, inferenceId].sort());
    for (const r of byKey) expect(r).toEqual({ api_key_id: r.api_key_id, ...expected.get(String(r.api_key_id)) });

    expect(((await usage(`${range}&group_by=workspace`)).body as Page).data).toEqual([
      { workspace_id: WS_DEFAULT, ...totals(5, 20, 52, 2, 3, '0.000161', 1) },
      { workspace_id: WS_B, ...totals(1, 4, 4, 0, 0, '0.00005') },
    ].sort((a, b) => a.workspace_id.localeCompare(b.workspace_id)));

    expect(((await usage(`${range}&group_by=model`)).body as Page).data).toEqual([
      { model: 'acme/model-reasoner', ...totals(1, 4, 8, 0, 3, null, 1) },
      { model: 'model-chat', ...totals(3, 12, 20, 2, 0, '0.000165') },
      { model: 'model-plain', ...totals(2, 8, 28, 0, 0, '0.000046') },
    ]);
  });

  it('pages with limit and after (the group of the last item), has_more false on the last page', async () => {
    const pages: Page[] = [];
    let after = '';
    for (;;) {
      const page = (await usage(`${range}&group_by=endpoint&limit=1${after ? `&after=${after}` : ''}`)).body as Page;
      pages.push(page);
      if (!page.has_more) break;
      after = String(page.data.at(-1)?.endpoint_id);
    }
    expect(pages.map((p) => [p.data.map((r) => r.endpoint_id), p.has_more])).toEqual([
      [[CHAT_ID], true],
      [[REASONER_ID], true],
      [[PLAIN_ID], false],
    ]);
    const firstDay = (await usage(`${range}&limit=1`)).body as Page;
    expect(firstDay).toMatchObject({ group_by: 'day', has_more: true, data: [{ start_time: dayA / 1000 }] });
    const nextDay = (await usage(`${range}&limit=1&after=${dayA / 1000}`)).body as Page;
    expect(nextDay).toMatchObject({ has_more: false, data: [{ start_time: dayB / 1000, requests: 2 }] });
  });

  it('defaults to the last 24 hours, by day', async () => {
    const body = (await usage('')).body as Page;
    expect(body.group_by).toBe('day');
    expect(body.end_time - body.start_time).toBe(86_400);
    // Day A's turns are more than 24 hours old: only day B's are in.
    expect(body.data).toEqual([{ start_time: dayB / 1000, end_time: (dayB + DAY_MS) / 1000, ...totals(2, 8, 16, 0, 3, '0.000014', 1) }]);
    expect((await usage(`start_time=${(dayB + DAY_MS) / 1000}&end_time=${(dayB + 2 * DAY_MS) / 1000}`)).body).toMatchObject({ data: [], has_more: false });
  });

  it('is a management route: management scope, the management rate limit, one project', async () => {
    const res = await usage(range);
    expect(res.headers.get('ratelimit-limit')).toBe('1000');
    expectError(await usage(range, suite.keys.inferenceOnly), 403, 'scope_insufficient');
    expectError(await call(`${suite.gw.url}/proj_other/v1/management/usage`, { key: suite.keys.full }), 403, 'project_mismatch');
  });

  it.each<[string, string, string, string]>([
    ['an unknown group', 'group_by=hour', 'invalid_query', 'group_by'],
    ['a limit of 0', 'limit=0', 'invalid_limit', 'limit'],
    ['a limit over 100', 'limit=101', 'invalid_limit', 'limit'],
    ['a limit that is not a number', 'limit=ten', 'invalid_limit', 'limit'],
    ['a start that is not Unix seconds', 'start_time=2026-01-01', 'invalid_query', 'start_time'],
    ['an end that is not Unix seconds', 'end_time=-5', 'invalid_query', 'end_time'],
    ['an end before the start', 'start_time=2000&end_time=1000', 'invalid_query', 'end_time'],
    ['an unknown parameter', 'groupby=day', 'invalid_query', 'groupby'],
    ['a parameter given twice', 'limit=5&limit=6', 'invalid_query', 'limit'],
    ['a short name beside the long one', 'start_time=1&start=2', 'invalid_query', 'start'],
    ['an empty cursor', 'after=', 'invalid_query', 'after'],
    ['a day cursor that is not a day', 'group_by=day&after=yesterday', 'invalid_query', 'after'],
  ])('answers 400 naming the parameter for %s', async (_name, query, code, param) => {
    const res = await usage(query);
    expectError(res, 400, code, param);
    expect(String(errorOf(res).message)).toContain(param);
  });

  it('accepts start and end as short names of start_time and end_time', async () => {
    const body = (await usage(`start=${dayA / 1000}&end=${dayB / 1000}&group_by=endpoint`)).body as Page;
    expect(body).toMatchObject({ start_time: dayA / 1000, end_time: dayB / 1000 });
    expect(body.data.map((r) => r.requests)).toEqual([3, 1]);
  });
});

describe('switchboard usage', () => {
  const cli = (args: string[]) => runCli(['usage', '--project', PROJECT, ...args]);

  it('prints the same totals as the API, as a table and as --json', async () => {
    const now = await advanceClock(suite.gw.url, 0);
    const start = Math.floor(now / DAY_MS) * DAY_MS - DAY_MS;
    const flags = ['--db', suite.gw.dbPath, '--since', String(start / 1000), '--until', String((start + 2 * DAY_MS) / 1000), '--group-by', 'endpoint'];
    const api = ((await usage(`start_time=${start / 1000}&end_time=${(start + 2 * DAY_MS) / 1000}&group_by=endpoint&limit=100`)).body as Page);

    const json = await cli([...flags, '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ ...api, has_more: false });

    const table = await cli(flags);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/));
    // Endpoints by slug and name, never by the UUID the API's group value is.
    expect(lines).toEqual([
      ['ENDPOINT', 'REQUESTS', 'PROMPT', 'COMPLETION', 'TOTAL', 'CACHED', 'REASONING', 'COST_USD', 'UNPRICED', 'NAME'],
      ['chat', '3', '12', '20', '32', '2', '0', '0.000165', '0', 'Test', 'chat'],
      ['reasoner', '1', '4', '8', '12', '0', '3', '-', '1', 'Test', 'reasoner'],
      ['plain', '2', '8', '28', '36', '0', '0', '0.000046', '0', 'Test', 'plain'],
      ['TOTAL', '6', '24', '56', '80', '2', '3', '0.000211', '1'],
    ]);
    expect(table.stdout).not.toContain(CHAT_ID);
    // The same store named by a config file's storage.path.
    const configFile = writeConfig(tempDir(), { ...suite.config, storage: { path: suite.gw.dbPath } });
    const byConfig = await cli(['--config', configFile, ...flags.slice(2)]);
    expect(byConfig.code, byConfig.stderr).toBe(0);
    expect(byConfig.stdout).toBe(table.stdout);
  });

  it('exits 2 on bad flags and on a store that does not exist, which it never creates', async () => {
    const missing = join(tempDir(), 'nothing-here.db');
    for (const args of [
      ['--db', suite.gw.dbPath, '--group-by', 'hour'],
      ['--db', suite.gw.dbPath, '--since', 'last tuesday'],
      ['--db', suite.gw.dbPath, '--since', '1000', '--until', '999'],
      ['--db', suite.gw.dbPath, '--colour'],
      [],
    ]) {
      const result = await cli(args);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
    }
    const result = await cli(['--db', missing]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('never creates one');
    expect(existsSync(missing)).toBe(false);
    const unknown = await runCli(['usage', '--project', 'proj_nope', '--db', suite.gw.dbPath]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no project proj_nope');
  });

  it("refuses --db on a PostgreSQL replica's own file (its ledger is in PostgreSQL), naming --config, instead of printing zeros", async () => {
    const path = join(tempDir(), 'replica.db');
    const db = openDatabase(path);
    markStoreKind(db, 'postgres');
    db.close();
    const result = await cli(['--db', path]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`is the own file of a gateway whose storage.kind is postgres; its usage ledger is in PostgreSQL`);
    expect(result.stderr).toContain("Read it with --config <that gateway's config file> instead of --db");
    expect(result.stdout).toBe('');
  });
});

describe('a money budget', () => {
  let receiver: Receiver | null = null;
  afterAll(() => receiver?.close());

  it('trips at its cap in cents (429 endpoint_budget_exhausted), and its alert carries the real spend in cents', async () => {
    receiver = await startReceiver();
    const hook = await call(`${suite.gw.url}/${PROJECT}/v1/webhooks`, { key: suite.keys.full, body: { url: receiver.url, events: ['budget.threshold_reached'] } });
    expect(hook.status).toBe(201);
    // small: 1000 USD per million tokens both ways = 0.1 cent a token; a turn of 4 + 16 tokens costs 2 cents. Cap: 5 cents.
    const first = await turn('small', suite.keys.full, { sim: { tokens: 16 } });
    const second = await turn('small', suite.keys.full, { sim: { tokens: 16 } });
    expect([first.status, second.status]).toEqual([200, 200]);
    // 4 cents spent: at 80% of the cap, so the next request is warned, and still served (charged after the turn).
    const third = await turn('small', suite.keys.full, { sim: { tokens: 16 } });
    expect(third.status).toBe(200);
    expect(third.headers.get('x-service-budget-warning')).toBe('endpoint:hardCap');
    const refused = await turn('small', suite.keys.full, { sim: { tokens: 16 } });
    expectError(refused, 429, 'endpoint_budget_exhausted');
    expect(String(errorOf(refused).message)).toContain('spend budget ($0.05) is spent ($0.06 used)');

    const [alert] = await receiver.waitFor(1);
    expect(alert?.body).toMatchObject({
      eventType: 'budget.threshold_reached',
      alertId: `budget_endpoint_${SMALL_ID}_hardCap_spend`,
      alertName: `endpoint ${SMALL_ID} hardCap spend budget at 80%`,
      projectId: PROJECT,
      threshold: 80,
      currentSpendCents: 4,
      budgetAmountCents: 5,
      spendPercentage: 80,
    });
  });

  it('is rebuilt from the ledger\'s recorded cost after a restart', async () => {
    await ledger().waitForCount(9);
    await suite.gw.stop();
    const restarted = await startGatewayProcess(suite.config, { dbPath: suite.gw.dbPath });
    try {
      const res = await call(`${restarted.url}/${PROJECT}/small/v1/chat/completions`, {
        key: suite.keys.full,
        body: { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
      });
      expectError(res, 429, 'endpoint_budget_exhausted');
    } finally {
      await restarted.stop();
    }
  });
});
