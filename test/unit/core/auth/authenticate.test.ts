import { describe, expect, it } from 'vitest';
import {
  authenticateKey,
  authorizeEndpoint,
  resolveWorkspace,
  type KeyCheck,
  type WorkspaceChoice,
} from '../../../../src/core/auth/authenticate.js';
import { compileIpFilter } from '../../../../src/core/auth/ip-filter.js';
import { hashKeyValue } from '../../../../src/core/auth/key-token.js';
import type { ApiKeyRecord, EndpointRecord, KeyCredential, ProjectRecord, WorkspaceRecord } from '../../../../src/core/records.js';
import { GatewayError } from '../../../../src/errors.js';

const NOW = Date.UTC(2025, 0, 15, 12, 0, 0);
const TOKEN = 'Zm9vYmFyYmF6cXV4LXF1dXotY29yZ2VfZ3JhdWx0MDE'; // 43 base64url characters
const KEY_VALUE = `svc_demo_${TOKEN}`;
const OTHER_VALUE = `svc_demo_${'B'.repeat(43)}`;

function makeProject(overrides: Partial<ProjectRecord> = {}): ProjectRecord {
  return {
    id: 'proj_demo',
    uuid: '6f1c2a4e-8d3b-4c5a-9e7f-0a1b2c3d4e5f',
    slug: 'demo',
    name: 'Demo',
    plan: 'paid',
    requestsPerMinute: 1024,
    tokensPerMinute: 2_097_152,
    defaultWorkspaceId: 'ws_a1',
    createdAt: NOW - 86_400_000,
    ...overrides,
  };
}

const PROJECT = makeProject();
const OTHER_PROJECT = makeProject({ id: 'proj_other', uuid: '0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b', slug: 'other' });

/** IP lists are given as text; the compiled filter is derived from them as the store does. */
function makeKey(overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  const allowedIps = overrides.allowedIps ?? [];
  const blockedIps = overrides.blockedIps ?? [];
  return {
    id: 'key_1',
    projectId: PROJECT.id,
    name: null,
    prefix: `svc_demo_${TOKEN.slice(0, 4)}`,
    scopes: ['inference'],
    expiresAt: null,
    quotaRequests: 0,
    quotaWindow: 60,
    endpointId: null,
    allowedWorkspaceIds: null,
    userId: null,
    issuedBy: null,
    source: 'config',
    createdAt: NOW - 3_600_000,
    revokedAt: null,
    ...overrides,
    allowedIps,
    blockedIps,
    ipFilter: compileIpFilter(allowedIps, blockedIps),
  };
}

function makeWorkspace(id: string): WorkspaceRecord {
  return {
    id,
    projectId: PROJECT.id,
    name: id,
    routingMode: null,
    routingModeDefault: 'semantic',
    pinnedEndpointId: null,
    operational: false,
    zeroDataRetention: false,
    createdAt: NOW - 86_400_000,
  };
}

function makeEndpoint(overrides: Partial<EndpointRecord> = {}): EndpointRecord {
  return {
    id: '1b4e28ba-2fa1-41d2-883f-0016d3cca427',
    projectId: PROJECT.id,
    slug: 'chat',
    name: 'Chat',
    kind: 'chat',
    tier: 'gpu',
    status: 'active',
    region: 'local',
    workspaceIds: ['ws_a1', 'ws_b2', 'ws_c3'],
    model: { id: 'llama-3', context_window: 8192, capabilities: [], reasoning: 'none', reasoning_budget: false },
    upstream: {
      base_url: 'http://127.0.0.1:9000/v1',
      model: 'llama-3',
      api_key_env: undefined,
      servers: [{ base_url: 'http://127.0.0.1:9000/v1', api_key_env: undefined, weight: 1 }],
      health: { failure_threshold: 3, cooldown_ms: 10_000 },
    },
    router: null,
    createdAt: NOW - 86_400_000,
    ...overrides,
  };
}

/** The GatewayError `fn` throws; fails the test when it returns or throws anything else. */
function gatewayErrorOf(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error('expected a GatewayError, but nothing was thrown');
}

interface AuthScenario {
  readonly key?: Partial<ApiKeyRecord>;
  /** validUntil of the credential the presented value maps to (a rotated-out value has one). */
  readonly validUntil?: number | null;
  readonly check?: Partial<KeyCheck>;
}

function authenticate({ key = {}, validUntil = null, check = {} }: AuthScenario = {}) {
  const credentials = new Map<string, KeyCredential>([[hashKeyValue(KEY_VALUE), { key: makeKey(key), validUntil }]]);
  const projects = [PROJECT, OTHER_PROJECT];
  return authenticateKey(
    {
      authorization: `Bearer ${KEY_VALUE}`,
      clientIp: () => '203.0.113.7',
      projectRef: PROJECT.id,
      scope: 'inference',
      now: NOW,
      ...check,
    },
    { findCredential: (hash) => credentials.get(hash) ?? null },
    (ref) => projects.find((p) => p.id === ref || p.uuid === ref) ?? null,
  );
}

const authError = (scenario: AuthScenario): GatewayError => gatewayErrorOf(() => authenticate(scenario));

describe('authenticateKey', () => {
  it('returns the key and its project for a valid bearer key', () => {
    const { key, project } = authenticate();
    expect(key.id).toBe('key_1');
    expect(project).toBe(PROJECT);
  });

  it('accepts the Bearer scheme case-insensitively and tolerates extra spaces', () => {
    expect(authenticate({ check: { authorization: `bearer   ${KEY_VALUE}  ` } }).key.id).toBe('key_1');
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['blank', '   '],
  ])('returns 401 authentication_required when the Authorization header is %s', (_label, authorization) => {
    expect(authError({ check: { authorization } })).toMatchObject({ code: 'authentication_required', status: 401 });
  });

  it.each([
    ['uses the Basic scheme', `Basic ${KEY_VALUE}`],
    ['has no scheme', KEY_VALUE],
    ['has a scheme but no value', 'Bearer'],
    ['has two values', `Bearer ${KEY_VALUE} ${KEY_VALUE}`],
    ['is not a switchboard key', 'Bearer sk-proj-0123456789abcdef'],
    ['has a 42-character token', `Bearer svc_demo_${TOKEN.slice(1)}`],
    ['has a 44-character token', `Bearer svc_demo_${TOKEN}x`],
    ['has an uppercase slug', `Bearer svc_DEMO_${TOKEN}`],
    ['has a token with base64 padding', `Bearer svc_demo_${TOKEN.slice(1)}=`],
  ])('returns 401 invalid_api_key when the header %s', (_label, authorization) => {
    expect(authError({ check: { authorization } })).toMatchObject({ code: 'invalid_api_key', status: 401, type: 'authentication_error' });
  });

  it('returns 401 invalid_api_key for a well-formed value whose hash is unknown', () => {
    expect(authError({ check: { authorization: `Bearer ${OTHER_VALUE}` } })).toMatchObject({ code: 'invalid_api_key', status: 401 });
  });

  it.each([
    ['revoked earlier', NOW - 1],
    ['revoked at this instant', NOW],
    // Regression: a key revoked "in the future" of a clock that stepped back used to authenticate again.
    ['revoked at a time the clock has not reached', NOW + 60_000],
  ])('returns 401 key_revoked for a key %s', (_label, revokedAt) => {
    expect(authError({ key: { revokedAt } })).toMatchObject({ code: 'key_revoked', status: 401 });
  });

  it.each([
    ['ended earlier', NOW - 1],
    ['ends at this instant', NOW],
  ])('returns 401 for a rotated-out value whose grace period %s', (_label, validUntil) => {
    expect(authError({ validUntil })).toMatchObject({ code: 'key_revoked', status: 401 });
  });

  it('still accepts a rotated-out value inside its grace period', () => {
    expect(authenticate({ validUntil: NOW + 1 }).key.id).toBe('key_1');
  });

  it.each([
    ['expired earlier', NOW - 1],
    ['expiring at this instant', NOW],
  ])('returns 401 key_expired for a key %s', (_label, expiresAt) => {
    expect(authError({ key: { expiresAt } })).toMatchObject({ code: 'key_expired', status: 401 });
  });

  it('accepts a key whose expiry is still ahead', () => {
    expect(authenticate({ key: { expiresAt: NOW + 1 } }).key.id).toBe('key_1');
  });

  it('reports a revoked key as 401 even when it also belongs to another project and lacks the scope', () => {
    const err = authError({ key: { revokedAt: NOW - 1, projectId: OTHER_PROJECT.id }, check: { scope: 'management' } });
    expect(err).toMatchObject({ code: 'key_revoked', status: 401 });
  });

  it.each([
    ['a project the key does not belong to', OTHER_PROJECT.id],
    ['the UUID of a project the key does not belong to', OTHER_PROJECT.uuid],
    ['an unknown project', 'proj_nope'],
  ])('returns 403 project_mismatch when the path names %s', (_label, projectRef) => {
    expect(authError({ check: { projectRef } })).toMatchObject({ code: 'project_mismatch', status: 403 });
  });

  it('names the key\'s own project in a project_mismatch, so a wrong path is easy to fix', () => {
    expect(authError({ check: { projectRef: 'proj_nope' } }).message).toContain(`it belongs to ${PROJECT.id}`);
  });

  it('accepts the project named by its UUID on a management route', () => {
    expect(authenticate({ key: { scopes: ['management'] }, check: { projectRef: PROJECT.uuid, scope: 'management' } }).project).toBe(PROJECT);
  });

  it.each(['inference', 'execution'] as const)('refuses the project named by its UUID on an %s route, naming the external id to use', (scope) => {
    const err = authError({ key: { scopes: ['inference', 'execution'] }, check: { projectRef: PROJECT.uuid, scope } });
    expect(err).toMatchObject({ code: 'project_mismatch', status: 403 });
    expect(err.message).toContain(`use /${PROJECT.id}/`);
  });

  it.each([
    ['inside an IPv4 allowlist range', { allowedIps: ['10.0.0.0/8'] }, '10.20.30.40'],
    ['equal to a single allowlisted address', { allowedIps: ['198.51.100.1', '10.0.0.0/8'] }, '198.51.100.1'],
    ['outside a blocklist with no allowlist', { blockedIps: ['10.0.0.0/8'] }, '192.0.2.1'],
    ['an IPv4-mapped IPv6 address inside an IPv4 range', { allowedIps: ['10.0.0.0/8'] }, '::ffff:10.0.0.5'],
    ['inside an IPv6 range', { allowedIps: ['2001:db8::/32'] }, '2001:db8:0:1::42'],
  ])('accepts a client address %s', (_label, key, clientIp) => {
    expect(authenticate({ key, check: { clientIp: () => clientIp } }).key.id).toBe('key_1');
  });

  it.each([
    ['outside the allowlist', { allowedIps: ['10.0.0.0/8'] }, '192.0.2.1'],
    ['in both lists (the blocklist wins)', { allowedIps: ['10.0.0.0/8'], blockedIps: ['10.0.0.5'] }, '10.0.0.5'],
    ['IPv4-mapped and blocked by an IPv4 rule', { blockedIps: ['10.0.0.0/24'] }, '::ffff:10.0.0.5'],
    ['outside an IPv6 allowlist range', { allowedIps: ['2001:db8::/32'] }, '2001:db9::1'],
    ['IPv6 while only IPv4 is allowlisted', { allowedIps: ['10.0.0.0/8'] }, '2001:db8::1'],
    ['unparseable', { allowedIps: ['10.0.0.0/8'] }, 'unknown'],
  ])('returns 403 ip_not_allowed when the address is %s', (_label, key, clientIp) => {
    expect(authError({ key, check: { clientIp: () => clientIp } })).toMatchObject({ code: 'ip_not_allowed', status: 403 });
  });

  it('returns 403 scope_insufficient with type authentication_error when the key lacks the route scope', () => {
    const err = authError({ key: { scopes: ['inference'] }, check: { scope: 'management' } });
    expect(err).toMatchObject({ code: 'scope_insufficient', status: 403, type: 'authentication_error' });
  });

  it('accepts a key holding the route scope among several', () => {
    expect(authenticate({ key: { scopes: ['inference', 'execution'] }, check: { scope: 'execution' } }).key.id).toBe('key_1');
  });
});

describe('authorizeEndpoint', () => {
  const endpoint = makeEndpoint();
  const otherEndpoint = makeEndpoint({ id: '7c9e6679-7425-40de-944b-e07fc1f90ae7', slug: 'embed' });

  it('lets an unrestricted key use any endpoint of its project', () => {
    expect(() => authorizeEndpoint(makeKey(), otherEndpoint)).not.toThrow();
  });

  it('lets a restricted key use its own endpoint', () => {
    expect(() => authorizeEndpoint(makeKey({ endpointId: endpoint.id }), endpoint)).not.toThrow();
  });

  it('returns 403 endpoint_restricted when a restricted key targets another endpoint', () => {
    const err = gatewayErrorOf(() => authorizeEndpoint(makeKey({ endpointId: endpoint.id }), otherEndpoint));
    expect(err).toMatchObject({ code: 'endpoint_restricted', status: 403 });
  });
});

describe('resolveWorkspace', () => {
  /** ws_a1, ws_b2 and ws_c3 are live; ws_dead is named by keys but does not exist. */
  const LIVE = new Map(['ws_a1', 'ws_b2', 'ws_c3'].map((id) => [id, makeWorkspace(id)]));

  interface WorkspaceScenario {
    readonly key?: Partial<ApiKeyRecord>;
    readonly project?: Partial<ProjectRecord>;
    readonly named?: string | null;
    readonly endpoint?: Partial<EndpointRecord>;
  }

  function resolve({ key = {}, project = {}, named = null, endpoint }: WorkspaceScenario): string | null {
    const choice: WorkspaceChoice = {
      named,
      namedBy: 'X-Workspace-Id',
      workspaces: LIVE,
      ...(endpoint ? { endpoint: makeEndpoint(endpoint) } : {}),
    };
    return resolveWorkspace(makeKey(key), makeProject(project), choice);
  }

  const resolveError = (scenario: WorkspaceScenario): GatewayError => gatewayErrorOf(() => resolve(scenario));

  it.each<[string, WorkspaceScenario, string | null]>([
    ['the named workspace for an unconfined key', { named: 'ws_b2' }, 'ws_b2'],
    ['the named workspace when it is in the key list', { key: { allowedWorkspaceIds: ['ws_a1', 'ws_b2'] }, named: 'ws_b2' }, 'ws_b2'],
    ['the named workspace when the endpoint serves it', { named: 'ws_c3', endpoint: { workspaceIds: ['ws_c3'] } }, 'ws_c3'],
    ['the only live workspace of a confined key that names none', { key: { allowedWorkspaceIds: ['ws_b2', 'ws_dead'] } }, 'ws_b2'],
    [
      'the only workspace of a confined key that the endpoint serves',
      { key: { allowedWorkspaceIds: ['ws_a1', 'ws_b2'] }, endpoint: { workspaceIds: ['ws_b2', 'ws_c3'] } },
      'ws_b2',
    ],
    ['the project default for an unconfined key that names none', {}, 'ws_a1'],
    ['the project default for a user-owned unconfined key', { key: { userId: 'user_1' } }, 'ws_a1'],
    [
      "the endpoint's first workspace when the endpoint does not serve the default",
      { endpoint: { workspaceIds: ['ws_c3', 'ws_b2'] } },
      'ws_c3',
    ],
    ['the default when the endpoint serves it', { endpoint: { workspaceIds: ['ws_c3', 'ws_a1'] } }, 'ws_a1'],
    ['null (the whole project) for a key with no user in a project without a default', { project: { defaultWorkspaceId: null } }, null],
  ])('returns %s', (_label, scenario, expected) => {
    expect(resolve(scenario)).toBe(expected);
  });

  it.each([['default'], ['WS_A1'], ['ws_'], ['ws_xyz'], ['6f1c2a4e-8d3b-4c5a-9e7f-0a1b2c3d4e5f'], [' ws_a1']])(
    'returns 400 invalid_workspace_id naming the header as param for %j',
    (named) => {
      expect(resolveError({ named })).toMatchObject({ code: 'invalid_workspace_id', status: 400, param: 'X-Workspace-Id' });
    },
  );

  it('uses namedBy as the param of invalid_workspace_id', () => {
    const choice: WorkspaceChoice = { named: 'nope', namedBy: 'workspace_id', workspaces: LIVE };
    const err = gatewayErrorOf(() => resolveWorkspace(makeKey(), PROJECT, choice));
    expect(err).toMatchObject({ code: 'invalid_workspace_id', param: 'workspace_id' });
  });

  it.each<[string, WorkspaceScenario]>([
    ['a confined key names a live workspace outside its list', { key: { allowedWorkspaceIds: ['ws_a1'] }, named: 'ws_b2' }],
    ['a confined key names an unknown workspace outside its list', { key: { allowedWorkspaceIds: ['ws_a1'] }, named: 'ws_ff' }],
    ['the endpoint does not serve the named workspace', { named: 'ws_b2', endpoint: { workspaceIds: ['ws_a1'] } }],
    ['none of the workspaces of a confined key is live', { key: { allowedWorkspaceIds: ['ws_dead'] } }],
    [
      'the endpoint serves none of the workspaces of a confined key',
      { key: { allowedWorkspaceIds: ['ws_a1'] }, endpoint: { workspaceIds: ['ws_c3'] } },
    ],
  ])('returns 403 workspace_not_allowed when %s', (_label, scenario) => {
    expect(resolveError(scenario)).toMatchObject({ code: 'workspace_not_allowed', status: 403 });
  });

  it('returns 404 workspace_not_found with the header as param when an unconfined key names an unknown workspace', () => {
    expect(resolveError({ named: 'ws_ff' })).toMatchObject({ code: 'workspace_not_found', status: 404, param: 'X-Workspace-Id' });
  });

  it.each<[string, WorkspaceScenario]>([
    ['a confined key with several live workspaces names none', { key: { allowedWorkspaceIds: ['ws_a1', 'ws_b2'] } }],
    [
      'a user-owned unconfined key names none in a project without a default',
      { key: { userId: 'user_1' }, project: { defaultWorkspaceId: null } },
    ],
  ])('returns 403 workspace_required when %s', (_label, scenario) => {
    expect(resolveError(scenario)).toMatchObject({ code: 'workspace_required', status: 403 });
  });
});
