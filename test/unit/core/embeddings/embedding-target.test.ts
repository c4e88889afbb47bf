import { describe, expect, it } from 'vitest';
import { embeddingTarget } from '../../../../src/core/embeddings/embedding-target.js';
import type { EndpointRecord } from '../../../../src/core/records.js';
import { GatewayError } from '../../../../src/errors.js';

function endpoint(slug: string, extra: Partial<EndpointRecord> = {}): EndpointRecord {
  return {
    id: `id-${slug}`,
    projectId: 'proj_x',
    slug,
    name: slug,
    kind: 'embedding',
    tier: 'cpu',
    status: 'active',
    region: 'local',
    workspaceIds: ['ws_1'],
    model: { id: `model-${slug}`, context_window: 8192, capabilities: [], reasoning: 'none', reasoning_budget: false },
    upstream: { base_url: 'http://127.0.0.1:1/v1', model: 'm' },
    router: null,
    createdAt: 0,
    ...extra,
  } as EndpointRecord;
}

const open = { workspaceId: 'ws_1', confined: false, keyEndpointId: null };

function refusal(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error('expected a GatewayError');
}

describe('embeddingTarget', () => {
  it('takes the active embedding endpoint serving the workspace with the lowest slug, never a chat endpoint', () => {
    const endpoints = [endpoint('zeta'), endpoint('alpha', { kind: 'chat' }), endpoint('beta'), endpoint('aaa', { status: 'suspended' })];
    expect(embeddingTarget('proj_x', endpoints, open)).toMatchObject({ endpoint: { slug: 'beta' }, workspaceId: 'ws_1' });
  });

  it('prefers endpoints of the workspace, else (for a key reaching the whole project) any, accounted where it serves', () => {
    const endpoints = [endpoint('elsewhere', { workspaceIds: ['ws_2'] })];
    expect(embeddingTarget('proj_x', endpoints, open)).toMatchObject({ endpoint: { slug: 'elsewhere' }, workspaceId: 'ws_2' });
    expect(embeddingTarget('proj_x', [...endpoints, endpoint('here')], open).endpoint.slug).toBe('here');
  });

  it('answers 404 endpoint_not_found when a named or confined workspace has none', () => {
    const endpoints = [endpoint('elsewhere', { workspaceIds: ['ws_2'] })];
    expect(refusal(() => embeddingTarget('proj_x', endpoints, { ...open, confined: true }))).toMatchObject({ status: 404, code: 'endpoint_not_found' });
    expect(refusal(() => embeddingTarget('proj_x', [endpoint('chat', { kind: 'chat' })], open)).code).toBe('endpoint_not_found');
  });

  it('keeps an endpoint-bound key to its endpoint: 403 endpoint_restricted otherwise', () => {
    const endpoints = [endpoint('alpha'), endpoint('beta')];
    expect(embeddingTarget('proj_x', endpoints, { ...open, keyEndpointId: 'id-beta' }).endpoint.slug).toBe('beta');
    expect(refusal(() => embeddingTarget('proj_x', endpoints, { ...open, keyEndpointId: 'id-chat' }))).toMatchObject({ status: 403, code: 'endpoint_restricted' });
  });

  it('answers 503 endpoint_unavailable when every reachable one is inactive', () => {
    expect(refusal(() => embeddingTarget('proj_x', [endpoint('alpha', { status: 'suspended' })], open))).toMatchObject({ status: 503, code: 'endpoint_unavailable' });
  });

  it('reaches every embedding endpoint of a project-wide request', () => {
    expect(embeddingTarget('proj_x', [endpoint('alpha', { workspaceIds: [] })], { ...open, workspaceId: null })).toMatchObject({ endpoint: { slug: 'alpha' }, workspaceId: null });
  });
});
