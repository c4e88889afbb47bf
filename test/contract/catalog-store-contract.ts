/**
 * What every implementation of the catalog port (src/core/store/catalog-store.ts) must do (issue 12), run
 * against SQLite and PostgreSQL by catalog-store.test.ts: the config sync (idempotent, safe when replicas
 * run it together, revoking what the file dropped), the key operations key management runs, and the
 * credential with its owner's reach (SPEC Authentication 10-11).
 */
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../../src/config.js';
import { hashKeyValue, keyPrefix } from '../../src/core/auth/key-token.js';
import type { CatalogStore, NewApiKey } from '../../src/core/store/catalog-store.js';

export interface CatalogStoreUnderTest {
  readonly store: CatalogStore;
  /** A dashboard user with a role in `projectId` (workspaces null: every one), as the identity store writes it. */
  addOwner(userId: string, projectId: string, workspaceIds: readonly string[] | null): Promise<void>;
  deleteOwner(userId: string): Promise<void>;
  close(): Promise<void>;
}

const PROJECT = 'proj_contract';
const EP_A = '1b4e28ba-2fa1-41d2-883f-0016d3cca427';
const EP_B = '7c9e6679-7425-40de-944b-e07fc1f90ae7';
const T0 = 1_700_000_000_000;
const value = (): string => `svc_contract_${randomBytes(32).toString('base64url')}`;

function config(opts: { endpoints?: readonly string[]; keys?: readonly string[] } = {}): Config {
  const endpoint = (id: string, i: number) => ({
    id, slug: `chat-${i}`, name: 'Chat', kind: 'chat', tier: 'gpu',
    model: { id: 'm', context_window: 4096 }, upstream: { base_url: 'http://127.0.0.1:1/v1', model: 'm' },
  });
  return parseConfig({
    projects: [
      {
        id: PROJECT,
        slug: 'contract',
        workspaces: [{ id: 'ws_0a', name: 'Main' }, { id: 'ws_0b', name: 'Second' }],
        default_workspace: 'ws_0a',
        endpoints: (opts.endpoints ?? [EP_A]).map(endpoint),
        keys: (opts.keys ?? []).map((v) => ({ value: v, name: 'declared' })),
      },
    ],
  });
}

function newKey(over: Partial<NewApiKey> = {}): { key: NewApiKey; value: string; hash: string } {
  const v = value();
  const id = `key_${randomBytes(8).toString('hex')}`;
  const key: NewApiKey = {
    id, projectId: PROJECT, name: 'made', prefix: keyPrefix(v), scopes: ['inference'], allowedIps: [], blockedIps: [],
    expiresAt: null, quotaRequests: 0, quotaWindow: 60, endpointId: null, allowedWorkspaceIds: null, userId: null, issuedBy: null, source: 'api', createdAt: T0,
    ...over,
  };
  return { key, value: v, hash: hashKeyValue(v) };
}

export function catalogStoreContract(name: string, make: () => Promise<CatalogStoreUnderTest>): void {
  describe(`catalog store contract: ${name}`, () => {
    let under: CatalogStoreUnderTest;
    let store: CatalogStore;
    beforeEach(async () => {
      under = await make();
      store = under.store;
    });
    afterEach(async () => {
      await under.close();
    });

    it('syncs the config file into projects, workspaces, endpoints and keys that authenticate', async () => {
      const declared = value();
      const summary = await store.syncConfig(config({ keys: [declared] }), T0);
      expect(summary).toEqual({ projects: 1, endpoints: 1, endpointsDeleted: 0, keys: 1, keysRevoked: 0 });
      const snap = await store.loadSnapshot();
      expect(snap.projects.map((p) => [p.id, p.slug, p.defaultWorkspaceId])).toEqual([[PROJECT, 'contract', 'ws_0a']]);
      expect(snap.workspaces.map((w) => w.id)).toEqual(['ws_0a', 'ws_0b']);
      expect(snap.endpoints.map((e) => [e.id, e.slug, e.workspaceIds])).toEqual([[EP_A, 'chat-0', ['ws_0a', 'ws_0b']]]);
      const credential = await store.findCredential(hashKeyValue(declared));
      expect(credential?.key).toMatchObject({ projectId: PROJECT, name: 'declared', source: 'config', revokedAt: null, prefix: keyPrefix(declared) });
      if (snap.credentials) expect(snap.credentials.get(hashKeyValue(declared))?.key.id).toBe(credential?.key.id);
    });

    it('syncs the same file again without a new row, also when two processes sync at once', async () => {
      const declared = value();
      await store.syncConfig(config({ keys: [declared] }), T0);
      const [again] = await Promise.all([store.syncConfig(config({ keys: [declared] }), T0 + 1), store.syncConfig(config({ keys: [declared] }), T0 + 2)]);
      expect(again).toEqual({ projects: 1, endpoints: 1, endpointsDeleted: 0, keys: 1, keysRevoked: 0 });
      expect(await store.listForProject(PROJECT)).toHaveLength(1);
      expect((await store.loadSnapshot()).projects).toHaveLength(1);
    });

    it('marks endpoints dropped from the file deleted, and takes a new id under an old slug', async () => {
      await store.syncConfig(config({ endpoints: [EP_A] }), T0);
      const summary = await store.syncConfig(config({ endpoints: [EP_B] }), T0 + 1);
      expect(summary.endpointsDeleted).toBe(1);
      expect((await store.loadSnapshot()).endpoints.map((e) => e.id)).toEqual([EP_B]);
    });

    it('revokes a config key dropped from the file and brings it back when it is declared again', async () => {
      const declared = value();
      await store.syncConfig(config({ keys: [declared] }), T0);
      expect((await store.syncConfig(config({ keys: [] }), T0 + 1)).keysRevoked).toBe(1);
      expect((await store.findCredential(hashKeyValue(declared)))?.key.revokedAt).toBe(T0 + 1);
      await store.syncConfig(config({ keys: [declared] }), T0 + 2);
      expect((await store.findCredential(hashKeyValue(declared)))?.key.revokedAt).toBeNull();
    });

    it('inserts a key with its value, finds it in its project only and lists it', async () => {
      await store.syncConfig(config(), T0);
      const { key, hash } = newKey({ scopes: ['inference', 'management'], allowedIps: ['10.0.0.0/8'], allowedWorkspaceIds: ['ws_0b'], expiresAt: T0 + 1000 });
      await store.insert(key, hash);
      const found = await store.findInProject(PROJECT, key.id);
      expect(found).toMatchObject({ ...key, revokedAt: null });
      expect(found?.ipFilter).not.toBeNull();
      expect(await store.findInProject('proj_other', key.id)).toBeNull();
      expect((await store.listForProject(PROJECT)).map((k) => k.id)).toEqual([key.id]);
      expect((await store.findCredential(hash))?.validUntil).toBeNull();
      expect(await store.findCredential(hashKeyValue(value()))).toBeNull();
    });

    it('revokes a key once: the second revocation changes nothing', async () => {
      await store.syncConfig(config(), T0);
      const { key, hash } = newKey();
      await store.insert(key, hash);
      expect(await store.revoke(key.id, T0 + 5, 'api')).toBe(true);
      expect(await store.revoke(key.id, T0 + 9, 'api')).toBe(false);
      expect((await store.findCredential(hash))?.key.revokedAt).toBe(T0 + 5);
      const snap = await store.loadSnapshot();
      if (snap.credentials) expect(snap.credentials.get(hash)?.key.revokedAt).toBe(T0 + 5);
    });

    it('rotates an active key: the old value has its grace, the new one is current and names the prefix', async () => {
      await store.syncConfig(config(), T0);
      const { key, hash } = newKey();
      await store.insert(key, hash);
      const next = value();
      expect(await store.rotate({ id: key.id, hash: hashKeyValue(next), prefix: keyPrefix(next), now: T0 + 10, graceUntil: T0 + 100 })).toBe(true);
      expect((await store.findCredential(hash))?.validUntil).toBe(T0 + 100);
      expect((await store.findCredential(hashKeyValue(next)))?.validUntil).toBeNull();
      expect((await store.findInProject(PROJECT, key.id))?.prefix).toBe(keyPrefix(next));
      expect(await store.rotatedValuesValidUntil(PROJECT)).toEqual(new Map([[key.id, T0 + 100]]));
    });

    it('rotates with a new scope list: the key, so every value of it, holds the new scopes', async () => {
      await store.syncConfig(config(), T0);
      const { key, hash } = newKey();
      await store.insert(key, hash);
      const next = value();
      expect(await store.rotate({ id: key.id, hash: hashKeyValue(next), prefix: keyPrefix(next), now: T0 + 10, graceUntil: T0 + 100, scopes: ['inference', 'management'] })).toBe(true);
      expect((await store.findInProject(PROJECT, key.id))?.scopes).toEqual(['inference', 'management']);
      expect((await store.findCredential(hashKeyValue(next)))?.key.scopes).toEqual(['inference', 'management']);
      expect((await store.findCredential(hash))?.key.scopes).toEqual(['inference', 'management']);
      const snap = await store.loadSnapshot();
      if (snap.credentials) expect(snap.credentials.get(hashKeyValue(next))?.key.scopes).toEqual(['inference', 'management']);
      const third = value();
      expect(await store.rotate({ id: key.id, hash: hashKeyValue(third), prefix: keyPrefix(third), now: T0 + 20, graceUntil: T0 + 200 })).toBe(true);
      expect((await store.findInProject(PROJECT, key.id))?.scopes).toEqual(['inference', 'management']);
    });

    it('records who received a key value: at insert, replaced by a rotation that names a receiver, kept by one that does not', async () => {
      await store.syncConfig(config(), T0);
      const { key, hash } = newKey({ issuedBy: 'key_creator' });
      await store.insert(key, hash);
      expect((await store.findInProject(PROJECT, key.id))?.issuedBy).toBe('key_creator');
      expect((await store.findCredential(hash))?.key.issuedBy).toBe('key_creator');
      const next = value();
      expect(await store.rotate({ id: key.id, hash: hashKeyValue(next), prefix: keyPrefix(next), now: T0 + 10, graceUntil: T0 + 100 })).toBe(true);
      expect((await store.findInProject(PROJECT, key.id))?.issuedBy).toBe('key_creator');
      const third = value();
      expect(await store.rotate({ id: key.id, hash: hashKeyValue(third), prefix: keyPrefix(third), now: T0 + 20, graceUntil: T0 + 200, issuedBy: 'usr_rotator' })).toBe(true);
      expect((await store.findInProject(PROJECT, key.id))?.issuedBy).toBe('usr_rotator');
      expect((await store.findCredential(hashKeyValue(third)))?.key.issuedBy).toBe('usr_rotator');
      const snap = await store.loadSnapshot();
      if (snap.credentials) expect(snap.credentials.get(hashKeyValue(third))?.key.issuedBy).toBe('usr_rotator');
    });

    it('refuses to rotate a revoked or an expired key', async () => {
      await store.syncConfig(config(), T0);
      const revoked = newKey();
      await store.insert(revoked.key, revoked.hash);
      await store.revoke(revoked.key.id, T0 + 1, 'api');
      const expired = newKey({ expiresAt: T0 + 5 });
      await store.insert(expired.key, expired.hash);
      const next = value();
      expect(await store.rotate({ id: revoked.key.id, hash: hashKeyValue(next), prefix: keyPrefix(next), now: T0 + 10, graceUntil: T0 + 100 })).toBe(false);
      expect(await store.rotate({ id: expired.key.id, hash: hashKeyValue(next), prefix: keyPrefix(next), now: T0 + 10, graceUntil: T0 + 100 })).toBe(false);
      expect(await store.findCredential(hashKeyValue(next))).toBeNull();
      expect(await store.rotatedValuesValidUntil(PROJECT)).toEqual(new Map());
    });

    it("confines a user's key to what its owner reads, and inactivates it once the owner is deleted", async () => {
      await store.syncConfig(config(), T0);
      await under.addOwner('usr_member', PROJECT, ['ws_0b']);
      await under.addOwner('usr_owner', PROJECT, null);
      const confined = newKey({ userId: 'usr_member', source: 'dashboard' });
      const free = newKey({ userId: 'usr_owner', source: 'dashboard' });
      await store.insert(confined.key, confined.hash);
      await store.insert(free.key, free.hash);
      expect((await store.findCredential(confined.hash))?.key).toMatchObject({ allowedWorkspaceIds: ['ws_0b'], listFromOwner: true });
      expect((await store.findCredential(free.hash))?.key.allowedWorkspaceIds).toBeNull();
      await under.deleteOwner('usr_member');
      expect((await store.findCredential(confined.hash))?.ownerDeleted).toBe(true);
      const snap = await store.loadSnapshot();
      if (snap.credentials) {
        expect(snap.credentials.get(confined.hash)?.ownerDeleted).toBe(true);
        expect(snap.credentials.get(free.hash)?.key.allowedWorkspaceIds).toBeNull();
      }
    });
  });
}
