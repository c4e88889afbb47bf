import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfigFile, parseConfig } from '../../src/config.js';

type Raw = Record<string, unknown>;

const TOKEN = 'Zm9vYmFyYmF6cXV4LXF1dXotY29yZ2VfZ3JhdWx0MDE'; // 43 base64url characters
const ENDPOINT_ID = '1b4e28ba-2fa1-41d2-883f-0016d3cca427';
const OTHER_ENDPOINT_ID = '7c9e6679-7425-40de-944b-e07fc1f90ae7';

function makeEndpoint(overrides: Raw = {}): Raw {
  return {
    id: ENDPOINT_ID,
    slug: 'chat',
    name: 'Chat',
    kind: 'chat',
    tier: 'gpu',
    model: { id: 'llama-3', context_window: 8192 },
    upstream: { base_url: 'http://127.0.0.1:9000/v1', model: 'llama-3' },
    ...overrides,
  };
}

function makeKey(overrides: Raw = {}): Raw {
  return { value: `svc_demo_${TOKEN}`, ...overrides };
}

function makeProject(overrides: Raw = {}): Raw {
  return {
    id: 'proj_demo',
    slug: 'demo',
    workspaces: [{ id: 'ws_a1', name: 'Main' }],
    endpoints: [makeEndpoint()],
    keys: [makeKey()],
    ...overrides,
  };
}

const withProject = (overrides: Raw = {}): Raw => ({ projects: [makeProject(overrides)] });

/** The ConfigError message parseConfig throws; fails the test when it parses or throws anything else. */
function configErrorOf(raw: unknown): string {
  try {
    parseConfig(raw);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('expected a ConfigError, but the config parsed');
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('parseConfig', () => {
  it('fills the defaults of a minimal config', () => {
    const config = parseConfig({ projects: [{ id: 'proj_demo', slug: 'demo', endpoints: [makeEndpoint()] }] });
    expect(config.server).toMatchObject({ host: '127.0.0.1', port: 8080, production: false, trust_proxy: false });
    expect(config.storage.path).toBe('data/switchboard.db');
    const [project] = config.projects;
    expect(project).toMatchObject({
      plan: 'paid',
      rate_limit: { requests_per_minute: 1024, tokens_per_minute: 2_097_152 },
      workspaces: [],
      keys: [],
    });
    expect(project?.endpoints[0]).toMatchObject({
      status: 'active',
      region: 'local',
      model: { reasoning: 'none', capabilities: [], reasoning_budget: false },
    });
  });

  it('fills the defaults of a declared key', () => {
    expect(parseConfig(withProject()).projects[0]?.keys[0]).toEqual({
      value: `svc_demo_${TOKEN}`,
      scopes: ['inference'],
      allowed_ips: [],
      blocked_ips: [],
      quota_requests: 0,
      quota_window: 60,
    });
  });

  it.each([[undefined], [null], [{}]])('treats %j as an empty config', (raw) => {
    expect(parseConfig(raw)).toMatchObject({ server: { port: 8080 }, projects: [] });
  });

  it('returns a deeply frozen config', () => {
    const config = parseConfig(withProject());
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.projects[0]?.endpoints[0]?.model)).toBe(true);
  });

  it('accepts a management key value in any project', () => {
    expect(() => parseConfig(withProject({ keys: [makeKey({ value: `svc_mgmt_${TOKEN}`, scopes: ['management'] })] }))).not.toThrow();
  });

  it('accepts a confined key naming declared workspaces', () => {
    expect(() => parseConfig(withProject({ keys: [makeKey({ allowed_workspace_ids: ['ws_a1'] })] }))).not.toThrow();
  });

  it('names the source in the message', () => {
    expect(() => parseConfig({ server: { port: -1 } }, 'data/demo.yaml')).toThrow(/^data\/demo\.yaml is invalid:\n/);
  });

  it('reports one line per issue', () => {
    const message = configErrorOf(withProject({ endpoints: [makeEndpoint({ id: 'x', kind: 'vision' })] }));
    expect(message).toMatch(/^projects\[0\]\.endpoints\[0\]\.id: /m);
    expect(message).toMatch(/^projects\[0\]\.endpoints\[0\]\.kind: /m);
  });

  it.each<[string, Raw, string]>([
    ['an unknown top-level key', { ...withProject(), bogus: true }, '(root)'],
    ['an unknown key inside a project', withProject({ colour: 'blue' }), 'projects[0]'],
    ['a port out of range', { server: { port: 70_000 } }, 'server.port'],
    ['a malformed project id', withProject({ id: 'demo' }), 'projects[0].id'],
    ['a duplicate project id', { projects: [makeProject(), makeProject({ slug: 'demo-2', keys: [] })] }, 'projects[1].id'],
    ['a duplicate project slug', { projects: [makeProject(), makeProject({ id: 'proj_two' })] }, 'projects[1].slug'],
    ['a malformed workspace id', withProject({ workspaces: [{ id: 'main', name: 'Main' }] }), 'projects[0].workspaces[0].id'],
    ['a bad endpoint kind', withProject({ endpoints: [makeEndpoint({ kind: 'vision' })] }), 'projects[0].endpoints[0].kind'],
    ['a non-UUID endpoint id', withProject({ endpoints: [makeEndpoint({ id: 'endpoint-1' })] }), 'projects[0].endpoints[0].id'],
    [
      'a duplicate endpoint slug',
      withProject({ endpoints: [makeEndpoint(), makeEndpoint({ id: OTHER_ENDPOINT_ID })] }),
      'projects[0].endpoints[1].slug',
    ],
    [
      'a duplicate endpoint id',
      withProject({ endpoints: [makeEndpoint(), makeEndpoint({ slug: 'chat-2' })] }),
      'projects[0].endpoints[1].id',
    ],
    ['the reserved slug v1', withProject({ endpoints: [makeEndpoint({ slug: 'v1' })] }), 'projects[0].endpoints[0].slug'],
    ['the reserved slug healthz', withProject({ endpoints: [makeEndpoint({ slug: 'healthz' })] }), 'projects[0].endpoints[0].slug'],
    [
      'an endpoint workspace not in workspaces',
      withProject({ endpoints: [makeEndpoint({ workspaces: ['ws_a1', 'ws_ff'] })] }),
      'projects[0].endpoints[0].workspaces[1]',
    ],
    [
      'an upstream that is not http(s)',
      withProject({ endpoints: [makeEndpoint({ upstream: { base_url: 'ftp://models.example', model: 'm' } })] }),
      'projects[0].endpoints[0].upstream.base_url',
    ],
    ['a default_workspace not in workspaces', withProject({ default_workspace: 'ws_ff' }), 'projects[0].default_workspace'],
    ['a malformed key value', withProject({ keys: [makeKey({ value: 'svc_demo_short' })] }), 'projects[0].keys[0].value'],
    [
      'a key value not matching the project slug',
      withProject({ keys: [makeKey({ value: `svc_other_${TOKEN}` })] }),
      'projects[0].keys[0].value',
    ],
    ['a duplicate key value', withProject({ keys: [makeKey(), makeKey()] }), 'projects[0].keys[1].value'],
    ['an unknown scope', withProject({ keys: [makeKey({ scopes: ['admin'] })] }), 'projects[0].keys[0].scopes[0]'],
    ['an empty scope list', withProject({ keys: [makeKey({ scopes: [] })] }), 'projects[0].keys[0].scopes'],
    ['a key endpoint_id naming no endpoint', withProject({ keys: [makeKey({ endpoint_id: OTHER_ENDPOINT_ID })] }), 'projects[0].keys[0].endpoint_id'],
    [
      'allowed_workspace_ids with the management scope',
      withProject({ keys: [makeKey({ scopes: ['management'], allowed_workspace_ids: ['ws_a1'] })] }),
      'projects[0].keys[0].allowed_workspace_ids',
    ],
    ['empty allowed_workspace_ids', withProject({ keys: [makeKey({ allowed_workspace_ids: [] })] }), 'projects[0].keys[0].allowed_workspace_ids'],
    [
      'allowed_workspace_ids naming an undeclared workspace',
      withProject({ keys: [makeKey({ allowed_workspace_ids: ['ws_a1', 'ws_ff'] })] }),
      'projects[0].keys[0].allowed_workspace_ids[1]',
    ],
    ['a bad CIDR in allowed_ips', withProject({ keys: [makeKey({ allowed_ips: ['10.0.0.0/8', '10.0.0.0/33'] })] }), 'projects[0].keys[0].allowed_ips[1]'],
    ['a non-address in blocked_ips', withProject({ keys: [makeKey({ blocked_ips: ['example.com'] })] }), 'projects[0].keys[0].blocked_ips[0]'],
    ['an expires_at that is not a timestamp', withProject({ keys: [makeKey({ expires_at: 'tomorrow' })] }), 'projects[0].keys[0].expires_at'],
    // Regressions: Date.parse accepted 'hello 1'; legacy IPv4 forms meant other addresses; ids and key values
    // duplicated across projects moved between them on sync; long slugs minted keys that never authenticate.
    ['an expires_at that Date.parse accepts but is not ISO 8601', withProject({ keys: [makeKey({ expires_at: 'hello 1' })] }), 'projects[0].keys[0].expires_at'],
    ['an octal-looking IPv4 address', withProject({ keys: [makeKey({ blocked_ips: ['010.0.0.1'] })] }), 'projects[0].keys[0].blocked_ips[0]'],
    ['a two-part IPv4 address', withProject({ keys: [makeKey({ allowed_ips: ['10.1/16'] })] }), 'projects[0].keys[0].allowed_ips[0]'],
    ['a slug over 40 characters', withProject({ slug: 'a'.repeat(41) }), 'projects[0].slug'],
    [
      'an endpoint id used by two projects',
      { projects: [makeProject(), makeProject({ id: 'proj_two', slug: 'two', keys: [], endpoints: [makeEndpoint()] })] },
      'projects[1].endpoints[0].id',
    ],
    [
      'a management key value used by two projects',
      {
        projects: [
          makeProject({ keys: [makeKey({ value: `svc_mgmt_${TOKEN}` })] }),
          makeProject({ id: 'proj_two', slug: 'two', endpoints: [makeEndpoint({ id: OTHER_ENDPOINT_ID })], keys: [makeKey({ value: `svc_mgmt_${TOKEN}` })] }),
        ],
      },
      'projects[1].keys[0].value',
    ],
  ])('rejects %s with a ConfigError naming %s', (_label, raw, path) => {
    expect(configErrorOf(raw)).toMatch(new RegExp(`^${escapeRegExp(path)}: `, 'm'));
  });

  it('names the unknown top-level key in the message', () => {
    expect(configErrorOf({ ...withProject(), bogus: true })).toContain('"bogus"');
  });
});

describe('loadConfigFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function writeConfig(name: string, text: string): string {
    const file = join(dir, name);
    writeFileSync(file, text);
    return file;
  }

  it('parses a YAML file', () => {
    const file = writeConfig('ok.yaml', 'server:\n  port: 9090\nprojects:\n  - id: proj_demo\n    slug: demo\n');
    expect(loadConfigFile(file)).toMatchObject({ server: { port: 9090 }, projects: [{ id: 'proj_demo', plan: 'paid' }] });
  });

  it('names the file and the field path of an invalid config', () => {
    const file = writeConfig('bad.yaml', 'server:\n  port: "eighty"\n');
    expect(() => loadConfigFile(file)).toThrow(new RegExp(`^${escapeRegExp(file)} is invalid:\\nserver\\.port: `));
  });

  it('throws a ConfigError for text that is not YAML', () => {
    const file = writeConfig('broken.yaml', 'server: [unclosed\n');
    expect(() => loadConfigFile(file)).toThrow(ConfigError);
    expect(() => loadConfigFile(file)).toThrow(/is not valid YAML/);
  });

  it('throws a ConfigError naming the errno code for a missing file', () => {
    expect(() => loadConfigFile(join(dir, 'missing.yaml'))).toThrow(/^cannot read config file .*missing\.yaml: ENOENT$/);
  });
});

describe('webhooks and event injection', () => {
  it('defaults the retry schedule and attempt timeout to SPEC\'s', () => {
    expect(parseConfig({}).webhooks).toEqual({
      retry_schedule_ms: [60_000, 300_000, 900_000, 3_600_000, 14_400_000],
      attempt_timeout_ms: 30_000,
      max_in_flight: 64,
      per_endpoint_in_flight: 16,
      poll_interval_ms: 250,
      retention_days: 30,
    });
  });

  it('takes a shorter schedule and timeout for tests', () => {
    expect(parseConfig({ webhooks: { retry_schedule_ms: [10], attempt_timeout_ms: 500 } }).webhooks).toMatchObject({ retry_schedule_ms: [10], attempt_timeout_ms: 500 });
  });

  it('refuses a retry delay that is not a positive integer', () => {
    expect(() => parseConfig({ webhooks: { retry_schedule_ms: [0] } })).toThrow(/webhooks\.retry_schedule_ms\[0\]/);
  });

  it('refuses testing.event_injection together with server.production', () => {
    expect(() => parseConfig({ server: { production: true }, testing: { event_injection: true } })).toThrow(/testing\.event_injection: cannot be on with server\.production: true/);
  });
});

describe('limits and budgets', () => {
  it('defaults the control-plane ceilings to SPEC: 60 management, 600 files, 600 conversation items', () => {
    expect(parseConfig({}).limits).toEqual({
      management_requests_per_minute: 60,
      files_requests_per_minute: 600,
      conversation_items_requests_per_minute: 600,
    });
  });

  it('reads token budgets on endpoints and workspaces, each window optional', () => {
    const config = parseConfig({
      projects: [
        makeProject({
          workspaces: [{ id: 'ws_a1', name: 'Main', budget: { daily_tokens: 500 } }],
          endpoints: [makeEndpoint({ budget: { hourly_tokens: 10, hard_cap_tokens: 1000 } })],
        }),
      ],
    });
    expect(config.projects[0]?.endpoints[0]?.budget).toEqual({ hourly_tokens: 10, hard_cap_tokens: 1000 });
    expect(config.projects[0]?.workspaces[0]?.budget).toEqual({ daily_tokens: 500 });
  });

  it.each([
    [{ hourly_tokens: 0 }, 'projects[0].endpoints[0].budget.hourly_tokens'],
    [{ daily_tokens: 1.5 }, 'projects[0].endpoints[0].budget.daily_tokens'],
    [{ monthly_tokens: 5 }, 'projects[0].endpoints[0].budget'],
  ])('refuses the endpoint budget %j, naming %s', (budget, path) => {
    expect(() => parseConfig({ projects: [makeProject({ endpoints: [makeEndpoint({ budget })] })] })).toThrow(path);
  });

  it('refuses a negative control-plane ceiling', () => {
    expect(() => parseConfig({ limits: { management_requests_per_minute: -1 } })).toThrow(/limits\.management_requests_per_minute/);
  });
});
