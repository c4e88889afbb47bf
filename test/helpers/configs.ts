/**
 * Config builders for API tests: one project with several endpoints, workspaces and keys covering every
 * authentication outcome. Keys are minted per call so suites never share secrets.
 */
import { mintTestKey } from './processes.js';

export const PROJECT = 'proj_test';
export const OTHER_PROJECT = 'proj_other';
export const WS_DEFAULT = 'ws_0a1b2c';
export const WS_B = 'ws_0b0b0b';
export const WS_C = 'ws_0c0c0c';
export const CHAT_ID = '11111111-1111-4111-8111-111111111111';
export const REASONER_ID = '22222222-2222-4222-8222-222222222222';
export const EMBED_ID = '33333333-3333-4333-8333-333333333333';
export const SUSPENDED_ID = '44444444-4444-4444-8444-444444444444';
export const B_ONLY_ID = '55555555-5555-4555-8555-555555555555';
export const PLAIN_ID = '77777777-7777-4777-8777-777777777777';
export const SMALL_ID = '88888888-8888-4888-8888-888888888888';
export const SLOW_ID = '99999999-9999-4999-8999-999999999999';
/** The free tier's deadlines in test configs: short, so timeouts are tested without long waits. */
export const FREE_TIER_TIMEOUTS = { request_ms: 1500, idle_ms: 600 };

export interface TestKeys {
  readonly full: string;
  readonly inferenceOnly: string;
  readonly managementOnly: string;
  readonly expired: string;
  readonly ipAllowed: string;
  readonly ipDenied: string;
  readonly ipBlockedWins: string;
  readonly endpointBound: string;
  readonly confinedOne: string;
  readonly confinedTwo: string;
  readonly otherProject: string;
}

export function makeKeys(): TestKeys {
  const t = (): string => mintTestKey('test');
  return {
    full: t(),
    inferenceOnly: t(),
    managementOnly: t(),
    expired: t(),
    ipAllowed: t(),
    ipDenied: t(),
    ipBlockedWins: t(),
    endpointBound: t(),
    confinedOne: t(),
    confinedTwo: t(),
    otherProject: mintTestKey('other'),
  };
}

/** An endpoint of a test config: the fields tests read or rewrite; builders may set any other config field. */
export interface TestEndpoint {
  id: string;
  slug: string;
  kind: string;
  [field: string]: unknown;
}

/** A key of a test config: `value` is the secret; scopes, IP lists, expiry and the like are free-form. */
export interface TestKey {
  value: string;
  [field: string]: unknown;
}

/** PROJECT and OTHER_PROJECT as testConfig builds them. */
export interface TestProject {
  id: string;
  slug: string;
  workspaces: Record<string, unknown>[];
  endpoints: TestEndpoint[];
  keys: TestKey[];
  [field: string]: unknown;
}

/** testConfig's result: PROJECT, OTHER_PROJECT, then any `extraProjects` as given. */
export interface TestConfig {
  projects: [TestProject, TestProject, ...Record<string, unknown>[]];
  [field: string]: unknown;
}

function endpoint(id: string, slug: string, upstream: string, extra: Record<string, unknown> = {}): TestEndpoint {
  return {
    id,
    slug,
    name: `Test ${slug}`,
    kind: 'chat',
    tier: 'gpu',
    model: { id: `model-${slug}`, name: `Model ${slug}`, context_window: 8192, capabilities: ['tools', 'structured_output'] },
    upstream: { base_url: upstream, model: 'sim-chat' },
    ...extra,
  };
}

/**
 * `server` overrides that protect /metrics and /readyz's detail with the scrape token test processes hold
 * (processes.ts TEST_SCRAPE_TOKEN): the detail (upstream servers, dependencies) is never public.
 */
export const SCRAPE_TOKEN_SERVER = { metrics: { token_env: 'SWITCHBOARD_TEST_SCRAPE_TOKEN' } } as const;

export interface ConfigOverrides {
  server?: Record<string, unknown>;
  security?: { allow_private_targets?: boolean; allow_http_targets?: boolean };
  webhooks?: Record<string, unknown>;
  testing?: { event_injection?: boolean };
  /** Top-level `limits` (management, files, conversation-items ceilings). */
  limits?: Record<string, unknown>;
  /** For PROJECT: plan, `rate_limit`, extra keys, and budgets by endpoint slug or workspace id. */
  plan?: 'free' | 'paid';
  rateLimit?: { requests_per_minute?: number; tokens_per_minute?: number };
  extraKeys?: TestKey[];
  budgets?: { endpoints?: Record<string, Record<string, number>>; workspaces?: Record<string, Record<string, number>> };
  /** Top-level `semantic_router` (deployment defaults of the router). */
  semanticRouter?: Record<string, unknown>;
  /** More projects after PROJECT and OTHER_PROJECT (e.g. the router project of test/helpers/router-config.ts). */
  extraProjects?: Record<string, unknown>[];
}

/** Adds `budget` to the items a budgets override names (endpoints by slug, workspaces by id). */
function withBudgets<T extends Record<string, unknown>>(items: T[], by: 'slug' | 'id', budgets: Record<string, Record<string, number>> | undefined): T[] {
  if (!budgets) return items;
  return items.map((item) => {
    const budget = budgets[String(item[by])];
    return budget ? { ...item, budget } : item;
  });
}

export function testConfig(upstream: string, keys: TestKeys, overrides: ConfigOverrides = {}): TestConfig {
  return {
    server: { host: '127.0.0.1', port: 0, region: 'local', ...overrides.server },
    testing: { controllable_clock: !overrides.server?.production, ...overrides.testing },
    ...(overrides.security ? { security: overrides.security } : {}),
    ...(overrides.webhooks ? { webhooks: overrides.webhooks } : {}),
    ...(overrides.limits ? { limits: overrides.limits } : {}),
    ...(overrides.semanticRouter ? { semantic_router: overrides.semanticRouter } : {}),
    timeouts: { free: FREE_TIER_TIMEOUTS },
    projects: [
      {
        id: PROJECT,
        slug: 'test',
        plan: overrides.plan ?? 'paid',
        ...(overrides.rateLimit ? { rate_limit: overrides.rateLimit } : {}),
        default_workspace: WS_DEFAULT,
        workspaces: withBudgets<Record<string, unknown>>([
          { id: WS_DEFAULT, name: 'Default' },
          { id: WS_B, name: 'B' },
          { id: WS_C, name: 'C', zero_data_retention: true },
        ], 'id', overrides.budgets?.workspaces),
        endpoints: withBudgets([
          endpoint(CHAT_ID, 'chat', upstream),
          endpoint(REASONER_ID, 'reasoner', upstream, {
            model: { id: 'acme/model-reasoner', context_window: 32768, capabilities: ['tools'], reasoning: ['low', 'medium', 'high'], reasoning_budget: true },
            upstream: { base_url: upstream, model: 'sim-reasoner' },
          }),
          endpoint(PLAIN_ID, 'plain', upstream, { model: { id: 'model-plain', context_window: 8192 } }),
          endpoint(SMALL_ID, 'small', upstream, { model: { id: 'model-small', context_window: 256, capabilities: ['tools'] } }),
          endpoint(SLOW_ID, 'slow', upstream, {
            tier: 'free',
            model: { id: 'model-slow', context_window: 8192, reasoning: ['low', 'medium', 'high'] },
            upstream: { base_url: upstream, model: 'sim-reasoner' },
          }),
          endpoint(EMBED_ID, 'embed', upstream, { kind: 'embedding', tier: 'cpu', model: { id: 'model-embed', context_window: 8192 } }),
          endpoint(SUSPENDED_ID, 'paused', upstream, { status: 'suspended' }),
          endpoint(B_ONLY_ID, 'b-only', upstream, { workspaces: [WS_B] }),
        ], 'slug', overrides.budgets?.endpoints),
        keys: [
          { value: keys.full, scopes: ['inference', 'management'] },
          { value: keys.inferenceOnly, scopes: ['inference'] },
          { value: keys.managementOnly, scopes: ['management'] },
          { value: keys.expired, scopes: ['inference'], expires_at: '2020-01-01T00:00:00Z' },
          { value: keys.ipAllowed, scopes: ['inference'], allowed_ips: ['127.0.0.0/8'] },
          { value: keys.ipDenied, scopes: ['inference'], allowed_ips: ['10.0.0.0/8', '2001:db8::/32'] },
          { value: keys.ipBlockedWins, scopes: ['inference'], allowed_ips: ['127.0.0.0/8'], blocked_ips: ['127.0.0.1'] },
          { value: keys.endpointBound, scopes: ['inference'], endpoint_id: CHAT_ID },
          { value: keys.confinedOne, scopes: ['inference'], allowed_workspace_ids: [WS_B] },
          { value: keys.confinedTwo, scopes: ['inference'], allowed_workspace_ids: [WS_DEFAULT, WS_B] },
          ...(overrides.extraKeys ?? []),
        ],
      },
      {
        id: OTHER_PROJECT,
        slug: 'other',
        workspaces: [{ id: 'ws_0d0d0d', name: 'Other' }],
        default_workspace: 'ws_0d0d0d',
        endpoints: [endpoint('66666666-6666-4666-8666-666666666666', 'chat', upstream)],
        keys: [{ value: keys.otherProject, scopes: ['inference', 'management'] }],
      },
      ...(overrides.extraProjects ?? []),
    ],
  };
}
