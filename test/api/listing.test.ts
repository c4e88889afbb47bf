import { describe, expect, it } from 'vitest';
import { CHAT_ID, PROJECT, WS_DEFAULT } from '../helpers/configs.js';
import { useGatewaySuite } from '../helpers/suite.js';
import { call, expectError } from '../helpers/http.js';

const suite = useGatewaySuite();

interface List<T> {
  object: string;
  data: T[];
}
type Item = Record<string, unknown>;

describe('GET /{project}/v1/models', () => {
  it('lists each served model once with exactly id, object, created and owned_by', async () => {
    const res = await call(`${suite.gw.url}/${PROJECT}/v1/models`, { key: suite.keys.full });
    expect(res.status).toBe(200);
    const list = res.body as List<Item>;
    expect(list.object).toBe('list');
    expect(list.data.map((m) => m.id).sort()).toEqual(['acme/model-reasoner', 'model-b-only', 'model-chat', 'model-embed', 'model-paused', 'model-plain', 'model-slow', 'model-small']);
    for (const m of list.data) {
      expect(Object.keys(m).sort()).toEqual(['created', 'id', 'object', 'owned_by']);
      expect(m.object).toBe('model');
      expect(Number.isInteger(m.created)).toBe(true);
      expect(m.owned_by).toBe(PROJECT);
    }
  });

  it('narrows to the named workspace', async () => {
    const res = await call(`${suite.gw.url}/${PROJECT}/v1/models`, { key: suite.keys.full, headers: { 'x-workspace-id': WS_DEFAULT } });
    expect((res.body as List<Item>).data.map((m) => m.id)).not.toContain('model-b-only');
  });

  it('shows an endpoint-bound key only its endpoint\'s model', async () => {
    const res = await call(`${suite.gw.url}/${PROJECT}/v1/models`, { key: suite.keys.endpointBound });
    expect((res.body as List<Item>).data.map((m) => m.id)).toEqual(['model-chat']);
    // A model served in the project but outside the key's reach: the 404 says which, not "not served".
    const other = await call(`${suite.gw.url}/${PROJECT}/v1/models/acme/model-reasoner`, { key: suite.keys.endpointBound });
    expectError(other, 404, 'model_not_found', 'model');
    expect((other.body as { error: { message: string } }).error.message).toContain("within this API key's reach");
  });

  it('retrieves one model by an id that contains a slash', async () => {
    const res = await call(`${suite.gw.url}/${PROJECT}/v1/models/acme/model-reasoner`, { key: suite.keys.full });
    expect(res.status).toBe(200);
    expect((res.body as Item).id).toBe('acme/model-reasoner');
  });

  it('returns 404 model_not_found with param model for an unknown model', async () => {
    expectError(await call(`${suite.gw.url}/${PROJECT}/v1/models/gpt-nope`, { key: suite.keys.full }), 404, 'model_not_found', 'model');
  });

  it('lists the endpoint\'s own model under a direct endpoint base URL', async () => {
    const res = await call(`${suite.gw.url}/${PROJECT}/chat/v1/models`, { key: suite.keys.full });
    expect((res.body as List<Item>).data.map((m) => m.id)).toEqual(['model-chat']);
  });
});

describe('GET /{project}/v1/endpoints', () => {
  it('lists every non-deleted endpoint, suspended ones included, with exactly SPEC\'s fields', async () => {
    const res = await call(`${suite.gw.url}/${PROJECT}/v1/endpoints`, { key: suite.keys.full });
    expect(res.status).toBe(200);
    const list = res.body as List<Item>;
    expect(list.object).toBe('list');
    expect(list.data.map((e) => e.slug).sort()).toEqual(['b-only', 'chat', 'embed', 'paused', 'plain', 'reasoner', 'slow', 'small']);
    const chat = list.data.find((e) => e.slug === 'chat');
    expect(chat).toEqual({
      id: CHAT_ID,
      object: 'endpoint',
      slug: 'chat',
      name: 'Test chat',
      model_id: 'model-chat',
      model_name: 'Model chat',
      tier_id: 'gpu',
      status: 'active',
      provisioning_state: null,
      provisioned_worker_id: null,
      created: expect.any(Number),
    });
    expect(list.data.find((e) => e.slug === 'paused')?.status).toBe('suspended');
  });

  it('requires the inference scope', async () => {
    expectError(await call(`${suite.gw.url}/${PROJECT}/v1/endpoints`, { key: suite.keys.managementOnly }), 403, 'scope_insufficient');
  });
});
