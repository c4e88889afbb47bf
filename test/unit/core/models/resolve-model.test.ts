import { describe, expect, it } from 'vitest';
import type { AuthenticatedKey } from '../../../../src/core/auth/authenticate.js';
import { NO_ALIASES, resolveModel, type ModelAliases, type ModelRequest } from '../../../../src/core/models/resolve-model.js';
import type { ApiKeyRecord, EndpointRecord, ProjectRecord, WorkspaceRecord } from '../../../../src/core/records.js';
import { GatewayError } from '../../../../src/errors.js';

const NOW = Date.UTC(2025, 0, 15, 12, 0, 0);
const WS_HOME = 'ws_a1';
const WS_TWO = 'ws_b2';

const PROJECT: ProjectRecord = {
  id: 'proj_demo',
  uuid: '6f1c2a4e-8d3b-4c5a-9e7f-0a1b2c3d4e5f',
  slug: 'demo',
  name: 'Demo',
  plan: 'paid',
  requestsPerMinute: 1024,
  tokensPerMinute: 2_097_152,
  defaultWorkspaceId: WS_HOME,
  createdAt: NOW - 86_400_000,
};

function workspace(id: string): WorkspaceRecord {
  return { id, projectId: PROJECT.id, name: id, routingMode: null, routingModeDefault: 'semantic', pinnedEndpointId: null, operational: false, zeroDataRetention: false, createdAt: NOW };
}

const WORKSPACES = new Map([WS_HOME, WS_TWO].map((id) => [id, workspace(id)] as const));

function key(overrides: Partial<ApiKeyRecord> = {}): AuthenticatedKey {
  const record: ApiKeyRecord = {
    id: 'key_1',
    projectId: PROJECT.id,
    name: null,
    prefix: 'svc_demo_abcd',
    scopes: ['inference'],
    allowedIps: [],
    blockedIps: [],
    ipFilter: null,
    expiresAt: null,
    quotaRequests: 0,
    quotaWindow: 60,
    endpointId: null,
    allowedWorkspaceIds: null,
    userId: null,
    issuedBy: null,
    source: 'config',
    createdAt: NOW,
    revokedAt: null,
    ...overrides,
  };
  return { key: record, project: PROJECT };
}

function endpoint(slug: string, overrides: Partial<EndpointRecord> & { modelId?: string } = {}): EndpointRecord {
  const { modelId, ...rest } = overrides;
  return {
    id: `id-${slug}`,
    projectId: PROJECT.id,
    slug,
    name: slug,
    kind: 'chat',
    tier: 'gpu',
    status: 'active',
    region: 'local',
    workspaceIds: [WS_HOME, WS_TWO],
    model: { id: modelId ?? `model-${slug}`, context_window: 8192, capabilities: [], reasoning: 'none', reasoning_budget: false },
    // Only the resolver's inputs matter here; the upstream's other settings are never read.
    upstream: { base_url: 'http://127.0.0.1:9000/v1', model: 'upstream' } as EndpointRecord['upstream'],
    router: null,
    createdAt: NOW,
    ...rest,
  };
}

interface Ask {
  readonly model: string;
  readonly kind?: ModelRequest['kind'];
  readonly named?: string;
  readonly auth?: AuthenticatedKey;
  readonly aliases?: ModelAliases;
}

function resolve(endpoints: EndpointRecord[], ask: Ask) {
  const request: ModelRequest = {
    model: ask.model,
    kind: ask.kind ?? 'chat',
    route: ask.kind === 'embedding' ? '/v1/embeddings' : '/v1/chat/completions',
    named: ask.named ?? null,
    namedBy: ask.named === undefined ? '' : 'X-Workspace-Id',
  };
  return resolveModel(ask.auth ?? key(), request, { endpoints, workspaces: WORKSPACES, aliases: ask.aliases ?? NO_ALIASES });
}

function refusal(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error('expected a GatewayError, but the model resolved');
}

describe('resolveModel: what a name stands for', () => {
  it('finds the endpoint serving a model id, and the workspace the request runs in', () => {
    const chat = endpoint('chat');
    expect(resolve([endpoint('other'), chat], { model: 'model-chat' })).toEqual({ endpoint: chat, workspaceId: WS_HOME });
  });

  it('accepts an endpoint slug when no model has that id', () => {
    const chat = endpoint('chat');
    expect(resolve([chat], { model: 'chat' }).endpoint).toBe(chat);
  });

  it('prefers a model id over an endpoint slug spelled the same, so a listed id is never shadowed', () => {
    const bySlug = endpoint('llama');
    const byId = endpoint('zeta', { modelId: 'llama' });
    expect(resolve([bySlug, byId], { model: 'llama' }).endpoint).toBe(byId);
  });

  it('resolves an alias as the model id it stands for, and a model id before an alias of the same name', () => {
    const chat = endpoint('chat');
    const aliases: ModelAliases = { modelIdOf: (projectId, alias) => (projectId === PROJECT.id && (alias === 'fast' || alias === 'model-other') ? 'model-chat' : null) };
    expect(resolve([chat, endpoint('other')], { model: 'fast', aliases }).endpoint).toBe(chat);
    expect(resolve([chat, endpoint('other')], { model: 'model-other', aliases }).endpoint.slug).toBe('other');
  });

  it('gives 404 model_not_found, param model, naming the listing route, for an unknown name', () => {
    const err = refusal(() => resolve([endpoint('chat')], { model: 'gpt-nope' }));
    expect({ code: err.code, status: err.status, param: err.param }).toEqual({ code: 'model_not_found', status: 404, param: 'model' });
    expect(err.message).toContain('GET /proj_demo/v1/models');
  });

  it('gives 400 naming both kinds when the model is served only by an endpoint of another kind', () => {
    const err = refusal(() => resolve([endpoint('embed', { kind: 'embedding' })], { model: 'model-embed' }));
    expect({ code: err.code, status: err.status, param: err.param }).toEqual({ code: 'invalid_request', status: 400, param: 'model' });
    expect(err.message).toMatch(/embedding endpoint embed.*\/v1\/chat\/completions needs a chat model/);
  });
});

describe('resolveModel: one model id served by several endpoints', () => {
  it('takes the endpoint of the route\'s kind, whatever the order', () => {
    const embed = endpoint('a-embed', { kind: 'embedding', modelId: 'mixed' });
    const chat = endpoint('b-chat', { modelId: 'mixed' });
    expect(resolve([embed, chat], { model: 'mixed' }).endpoint).toBe(chat);
    expect(resolve([embed, chat], { model: 'mixed', kind: 'embedding' }).endpoint).toBe(embed);
  });

  it('prefers an active endpoint to a suspended one created earlier', () => {
    const paused = endpoint('a', { modelId: 'm', status: 'suspended', createdAt: NOW - 1000 });
    const active = endpoint('b', { modelId: 'm' });
    expect(resolve([paused, active], { model: 'm' }).endpoint).toBe(active);
  });

  it('returns the only endpoint even when it is not active (the route answers 503 for it)', () => {
    const paused = endpoint('a', { modelId: 'm', status: 'suspended' });
    expect(resolve([paused], { model: 'm' }).endpoint).toBe(paused);
  });

  it('prefers, for an unconfined key, the endpoint serving the project default workspace', () => {
    const elsewhere = endpoint('a', { modelId: 'm', workspaceIds: [WS_TWO], createdAt: NOW - 1000 });
    const home = endpoint('b', { modelId: 'm', workspaceIds: [WS_HOME] });
    expect(resolve([elsewhere, home], { model: 'm' })).toEqual({ endpoint: home, workspaceId: WS_HOME });
  });

  it('follows the workspace the request names', () => {
    const two = endpoint('a', { modelId: 'm', workspaceIds: [WS_TWO] });
    const home = endpoint('b', { modelId: 'm', workspaceIds: [WS_HOME] });
    expect(resolve([two, home], { model: 'm', named: WS_TWO })).toEqual({ endpoint: two, workspaceId: WS_TWO });
    expect(resolve([two, home], { model: 'm', named: WS_HOME })).toEqual({ endpoint: home, workspaceId: WS_HOME });
  });

  it('takes the endpoint a confined key reaches, in its workspace', () => {
    const home = endpoint('a', { modelId: 'm', workspaceIds: [WS_HOME] });
    const two = endpoint('b', { modelId: 'm', workspaceIds: [WS_TWO] });
    expect(resolve([home, two], { model: 'm', auth: key({ allowedWorkspaceIds: [WS_TWO] }) })).toEqual({ endpoint: two, workspaceId: WS_TWO });
  });

  it('takes the endpoint an endpoint-restricted key is bound to', () => {
    const a = endpoint('a', { modelId: 'm' });
    const b = endpoint('b', { modelId: 'm' });
    expect(resolve([a, b], { model: 'm', auth: key({ endpointId: b.id }) }).endpoint).toBe(b);
  });

  it('breaks remaining ties by creation time, then slug', () => {
    const older = endpoint('z', { modelId: 'm', createdAt: NOW - 1000 });
    const a = endpoint('a', { modelId: 'm' });
    const b = endpoint('b', { modelId: 'm' });
    expect(resolve([b, a, older], { model: 'm' }).endpoint).toBe(older);
    expect(resolve([b, a], { model: 'm' }).endpoint).toBe(a);
    expect(resolve([a, b], { model: 'm' }).endpoint).toBe(a);
  });
});

describe('resolveModel: a model outside the key\'s reach gets the direct route\'s answer', () => {
  it('403 endpoint_restricted for an endpoint-restricted key naming another endpoint\'s model', () => {
    const err = refusal(() => resolve([endpoint('a'), endpoint('b')], { model: 'model-b', auth: key({ endpointId: 'id-a' }) }));
    expect({ code: err.code, status: err.status }).toEqual({ code: 'endpoint_restricted', status: 403 });
  });

  it('403 workspace_not_allowed for a confined key naming a model no endpoint of its workspaces serves', () => {
    const err = refusal(() => resolve([endpoint('a', { workspaceIds: [WS_HOME] })], { model: 'model-a', auth: key({ allowedWorkspaceIds: [WS_TWO] }) }));
    expect({ code: err.code, status: err.status }).toEqual({ code: 'workspace_not_allowed', status: 403 });
  });

  it('403 workspace_not_allowed when the named workspace is not served by the model', () => {
    const err = refusal(() => resolve([endpoint('a', { workspaceIds: [WS_HOME] })], { model: 'model-a', named: WS_TWO }));
    expect({ code: err.code, status: err.status }).toEqual({ code: 'workspace_not_allowed', status: 403 });
  });

  it('403 workspace_required for a key confined to two workspaces that names neither', () => {
    const err = refusal(() => resolve([endpoint('a')], { model: 'model-a', auth: key({ allowedWorkspaceIds: [WS_HOME, WS_TWO] }) }));
    expect({ code: err.code, status: err.status }).toEqual({ code: 'workspace_required', status: 403 });
  });

  it('400 invalid_workspace_id and 404 workspace_not_found for a bad named workspace, as on direct routes', () => {
    expect(refusal(() => resolve([endpoint('a')], { model: 'model-a', named: 'nope' })).code).toBe('invalid_workspace_id');
    expect(refusal(() => resolve([endpoint('a')], { model: 'model-a', named: 'ws_ffff' })).code).toBe('workspace_not_found');
  });

  it('still says 404 model_not_found, not 403, for a name the project does not serve at all', () => {
    expect(refusal(() => resolve([endpoint('a')], { model: 'nope', auth: key({ endpointId: 'id-a' }) })).code).toBe('model_not_found');
  });
});
