import { describe, expect, it } from 'vitest';
import { checkKeyRequest, keyCreationRefusal, KeyRequestError, mintKey, type KeyRequest, type KeyRequestContext } from '../../../../src/core/auth/key-request.js';
import { hashKeyValue } from '../../../../src/core/auth/key-token.js';
import type { ApiKeyRecord, EndpointRecord, ProjectRecord, WorkspaceRecord } from '../../../../src/core/records.js';

const NOW = 1_800_000_000_000;
const project = { id: 'proj_a', uuid: 'u', slug: 'a', name: 'A', plan: 'paid', requestsPerMinute: 1, tokensPerMinute: 1, defaultWorkspaceId: null, createdAt: 0 } satisfies ProjectRecord;
const ws = (id: string) => [id, { id, projectId: 'proj_a', name: id, routingMode: null, routingModeDefault: 'semantic', pinnedEndpointId: null, operational: false, zeroDataRetention: false, createdAt: 0 } satisfies WorkspaceRecord] as const;
const ctx: KeyRequestContext = {
  project,
  endpoints: [{ id: '11111111-1111-4111-8111-111111111111' } as EndpointRecord],
  workspaces: new Map([ws('ws_0a'), ws('ws_0b')]),
  now: NOW,
};
const base: KeyRequest = {
  scopes: ['inference'], name: null, expiresAt: null, endpointId: null, allowedWorkspaceIds: null,
  allowedIps: [], blockedIps: [], quotaRequests: 0, quotaWindow: 60,
};

function fieldOf(r: Partial<KeyRequest>): string | null {
  try {
    checkKeyRequest({ ...base, ...r }, ctx);
    return null;
  } catch (err) {
    if (err instanceof KeyRequestError) return err.field;
    throw err;
  }
}

describe('checkKeyRequest (SPEC Authentication 10 and the key table)', () => {
  it.each<[string, Partial<KeyRequest>, string]>([
    ['an empty workspace list', { allowedWorkspaceIds: [] }, 'allowed_workspace_ids'],
    ['a workspace list with the management scope', { allowedWorkspaceIds: ['ws_0a'], scopes: ['inference', 'management'] }, 'allowed_workspace_ids'],
    ['a workspace that is not live in the project', { allowedWorkspaceIds: ['ws_0a', 'ws_0c'] }, 'allowed_workspace_ids[1]'],
    ['an endpoint of no project endpoint', { endpointId: '99999999-9999-4999-8999-999999999999' }, 'endpoint_id'],
    ['an allowlist entry that is not an address', { allowedIps: ['10.0.0.0/8', 'nope'] }, 'allowed_ips[1]'],
    ['a blocklist entry that is not an address', { blockedIps: ['010.0.0.1'] }, 'blocked_ips[0]'],
    ['an expiry in the past', { expiresAt: NOW - 1 }, 'expires_at'],
  ])('refuses %s', (_what, r, field) => {
    expect(fieldOf(r)).toBe(field);
  });

  it('accepts a confined inference key, an endpoint binding, IP filters and a future expiry', () => {
    expect(fieldOf({ allowedWorkspaceIds: ['ws_0b'], endpointId: '11111111-1111-4111-8111-111111111111', allowedIps: ['::1'], blockedIps: ['10.0.0.0/8'], expiresAt: NOW + 1 })).toBeNull();
  });
});

describe('keyCreationRefusal', () => {
  const creator = (over: Partial<ApiKeyRecord>) => ({ allowedWorkspaceIds: null, userId: null, ...over }) as ApiKeyRecord;

  it('lets a key with no user and no list create keys', () => {
    expect(keyCreationRefusal(creator({}), false)).toBeNull();
  });

  it('never lets a confined key create keys', () => {
    expect(keyCreationRefusal(creator({ allowedWorkspaceIds: ['ws_0a'] }), false)).toMatch(/confined/);
    expect(keyCreationRefusal(creator({ allowedWorkspaceIds: ['ws_0a'], userId: 'usr_1' }), true)).toMatch(/confined/);
  });

  it('lets a personal key create keys only when its user owns the project', () => {
    expect(keyCreationRefusal(creator({ userId: 'usr_1' }), false)).toMatch(/owns the project; user usr_1 is not an owner/);
    expect(keyCreationRefusal(creator({ userId: 'usr_1' }), true)).toBeNull();
  });
});

describe('mintKey', () => {
  it('mints svc_mgmt_<43> with its hash and a short prefix, scopes deduplicated', () => {
    const minted = mintKey({ ...base, scopes: ['inference', 'management', 'inference'], name: 'ci' }, ctx, { source: 'api', valueSegment: 'mgmt' });
    expect(minted.value).toMatch(/^svc_mgmt_[A-Za-z0-9_-]{43}$/);
    expect(minted.hash).toBe(hashKeyValue(minted.value));
    expect(minted.record).toMatchObject({ projectId: 'proj_a', name: 'ci', scopes: ['inference', 'management'], source: 'api', userId: null, createdAt: NOW });
    expect(minted.record.prefix).toBe(minted.value.slice(0, 'svc_mgmt_'.length + 4));
    expect(minted.record.id).toMatch(/^key_[0-9a-f]{24}$/);
  });

  it('checks before minting', () => {
    expect(() => mintKey({ ...base, allowedWorkspaceIds: [] }, ctx, { source: 'cli', valueSegment: 'a' })).toThrow(KeyRequestError);
  });
});
