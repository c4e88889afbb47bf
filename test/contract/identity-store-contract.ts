/**
 * What every implementation of the identity port (src/core/store/identity-store.ts) must do, run against
 * each: SQLite (this instance's file) and PostgreSQL (shared by replicas). The suite owns no clock: times
 * are given to every call.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { IdentityStore, SessionRecord, UserRole } from '../../src/core/store/identity-store.js';

export interface IdentityStoreUnderTest {
  readonly store: IdentityStore;
  /** An active API key owned by `userId` (the catalog's table), returning its id. */
  seedKey(userId: string | null): Promise<string>;
  /** The key's revoked_reason, or null while it is active. */
  revokedReason(keyId: string): Promise<string | null>;
  close(): Promise<void>;
}

const T0 = 1_700_000_000_000;
const owner = (projectId = 'proj_a'): UserRole => ({ projectId, role: 'owner', workspaceIds: null });

function session(userId: string, idHash: string, over: Partial<SessionRecord> = {}): SessionRecord {
  return { idHash, userId, stage: 'full', createdAt: T0, lastSeenAt: T0, ip: '127.0.0.1', userAgent: 'test', nextPath: null, ...over };
}

export function identityStoreContract(name: string, make: () => Promise<IdentityStoreUnderTest>): void {
  describe(`identity store contract: ${name}`, () => {
    let under: IdentityStoreUnderTest;
    let store: IdentityStore;
    beforeEach(async () => {
      under = await make();
      store = under.store;
    });
    afterEach(async () => {
      await under.close();
    });

    const newUser = async (id: string, email = `${id}@example.test`, roles: readonly UserRole[] = [owner()]): Promise<void> =>
      store.users.create({ id, email, name: id, passwordHash: 'hash', now: T0 }, roles);

    it('finds a created user by id, and by e-mail whatever its case, with its roles', async () => {
      await newUser('usr_1', 'ada@example.test', [owner('proj_b'), { projectId: 'proj_a', role: 'member', workspaceIds: ['ws_1', 'ws_2'] }]);
      const user = await store.users.byId('usr_1');
      expect(user).toEqual({ id: 'usr_1', email: 'ada@example.test', name: 'usr_1', passwordHash: 'hash', totpSealed: null, totpLastStep: null, createdAt: T0, updatedAt: T0 });
      expect(await store.users.byEmail('ADA@Example.TEST')).toEqual(user);
      expect(await store.users.byEmail('bob@example.test')).toBeNull();
      expect(await store.users.roles('usr_1')).toEqual([
        { projectId: 'proj_a', role: 'member', workspaceIds: ['ws_1', 'ws_2'] },
        { projectId: 'proj_b', role: 'owner', workspaceIds: null },
      ]);
    });

    it('refuses a second user whose e-mail differs only in case, and keeps the first', async () => {
      await newUser('usr_1', 'ada@example.test');
      await expect(newUser('usr_2', 'Ada@Example.test')).rejects.toThrow();
      expect((await store.users.list()).map((u) => u.id)).toEqual(['usr_1']);
    });

    it('lists users oldest first and changes a role in place', async () => {
      await store.users.create({ id: 'usr_b', email: 'b@example.test', name: 'B', passwordHash: null, now: T0 + 1 }, []);
      await newUser('usr_a');
      expect((await store.users.list()).map((u) => u.id)).toEqual(['usr_a', 'usr_b']);
      await store.users.setRole('usr_b', { projectId: 'proj_a', role: 'admin', workspaceIds: ['ws_9'] });
      await store.users.setRole('usr_b', { projectId: 'proj_a', role: 'member', workspaceIds: null });
      expect(await store.users.roles('usr_b')).toEqual([{ projectId: 'proj_a', role: 'member', workspaceIds: null }]);
    });

    it('deletes a user with their sessions and roles, and revokes only their active keys', async () => {
      await newUser('usr_1');
      await newUser('usr_2');
      const mine = await under.seedKey('usr_1');
      const theirs = await under.seedKey('usr_2');
      const unowned = await under.seedKey(null);
      await store.sessions.replace(null, session('usr_1', 'h1'));
      expect(await store.users.delete('usr_1', T0 + 5)).toEqual({ deleted: true, keysRevoked: 1 });
      expect(await under.revokedReason(mine)).toBe('user_deleted');
      expect(await under.revokedReason(theirs)).toBeNull();
      expect(await under.revokedReason(unowned)).toBeNull();
      expect(await store.users.byId('usr_1')).toBeNull();
      expect(await store.users.roles('usr_1')).toEqual([]);
      expect(await store.sessions.find('h1')).toBeNull();
      expect(await store.users.delete('usr_1', T0 + 6)).toEqual({ deleted: false, keysRevoked: 0 });
    });

    it('takes a user out of one project: the role goes, their active keys there are revoked, other roles stay', async () => {
      await newUser('usr_1', 'one@example.test', [owner('proj_a'), owner('proj_b')]);
      await newUser('usr_2');
      const mine = await under.seedKey('usr_1');
      const theirs = await under.seedKey('usr_2');
      expect(await store.users.removeRole('usr_1', 'proj_a', T0 + 5)).toEqual({ removed: true, keysRevoked: 1 });
      expect(await under.revokedReason(mine)).toBe('member_removed');
      expect(await under.revokedReason(theirs)).toBeNull();
      expect(await store.users.roles('usr_1')).toEqual([owner('proj_b')]);
      expect(await store.users.byId('usr_1')).not.toBeNull();
      expect(await store.users.removeRole('usr_1', 'proj_a', T0 + 6)).toEqual({ removed: false, keysRevoked: 0 });
    });

    it('ends every session of a user whose password changes, and no one else\'s', async () => {
      await newUser('usr_1');
      await newUser('usr_2');
      await store.sessions.replace(null, session('usr_1', 'h1'));
      await store.sessions.replace(null, session('usr_2', 'h2'));
      await store.users.setPassword('usr_1', 'new-hash', T0 + 9);
      expect(await store.users.byId('usr_1')).toMatchObject({ passwordHash: 'new-hash', updatedAt: T0 + 9 });
      expect(await store.sessions.find('h1')).toBeNull();
      expect(await store.sessions.find('h2')).not.toBeNull();
    });

    it('accepts each TOTP time step once and never an older one', async () => {
      await newUser('usr_1');
      await store.users.setTotp('usr_1', 'sealed-secret', T0 + 1);
      expect(await store.users.claimTotpStep('usr_1', 100)).toBe(true);
      expect(await store.users.claimTotpStep('usr_1', 100)).toBe(false);
      expect(await store.users.claimTotpStep('usr_1', 99)).toBe(false);
      expect(await store.users.claimTotpStep('usr_1', 101)).toBe(true);
      expect(await store.users.byId('usr_1')).toMatchObject({ totpSealed: 'sealed-secret', totpLastStep: 101 });
      expect(await store.users.newestSealedTotp()).toEqual({ sealed: 'sealed-secret', associated: 'usr_1' });
    });

    it('gives a step claimed by two callers at once to exactly one', async () => {
      await newUser('usr_1');
      const claims = await Promise.all(Array.from({ length: 8 }, () => store.users.claimTotpStep('usr_1', 7)));
      expect(claims.filter(Boolean)).toHaveLength(1);
    });

    it('uses each backup code once, forgets old codes on replacement, and drops them all when two-factor is turned off', async () => {
      await newUser('usr_1');
      await store.users.setTotp('usr_1', 'sealed', T0);
      await store.users.replaceBackupCodes('usr_1', ['c1', 'c2', 'c3']);
      expect(await store.users.useBackupCode('usr_1', 'c1', T0)).toBe(true);
      expect(await store.users.useBackupCode('usr_1', 'c1', T0)).toBe(false);
      expect(await store.users.useBackupCode('usr_1', 'nope', T0)).toBe(false);
      expect(await store.users.unusedBackupCodes('usr_1')).toBe(2);
      await store.users.replaceBackupCodes('usr_1', ['d1']);
      expect(await store.users.useBackupCode('usr_1', 'c2', T0)).toBe(false);
      expect(await store.users.unusedBackupCodes('usr_1')).toBe(1);
      await store.users.setTotp('usr_1', null, T0 + 1);
      expect(await store.users.unusedBackupCodes('usr_1')).toBe(0);
      expect(await store.users.byId('usr_1')).toMatchObject({ totpSealed: null, totpLastStep: null });
      expect(await store.users.newestSealedTotp()).toBeNull();
    });

    it('links, finds, lists and unlinks sign-in provider identities; a subject links to one user only', async () => {
      await newUser('usr_1');
      await newUser('usr_2');
      await store.users.linkIdentity({ providerId: 'okta', subject: 'sub-1', userId: 'usr_1', email: 'a@idp.test', now: T0 });
      await store.users.linkIdentity({ providerId: 'google', subject: 'g-1', userId: 'usr_1', email: null, now: T0 });
      await expect(store.users.linkIdentity({ providerId: 'okta', subject: 'sub-1', userId: 'usr_2', email: null, now: T0 })).rejects.toThrow();
      expect(await store.users.identity('okta', 'sub-1')).toEqual({ providerId: 'okta', subject: 'sub-1', userId: 'usr_1', email: 'a@idp.test', createdAt: T0 });
      expect((await store.users.identitiesOf('usr_1')).map((i) => i.providerId)).toEqual(['google', 'okta']);
      expect(await store.users.unlinkIdentity('usr_2', 'okta')).toBe(false);
      expect(await store.users.unlinkIdentity('usr_1', 'okta')).toBe(true);
      expect(await store.users.identity('okta', 'sub-1')).toBeNull();
    });

    it('reads a session with its user and roles in one view, and nothing for an unknown id', async () => {
      await newUser('usr_1', 'ada@example.test', [{ projectId: 'proj_a', role: 'admin', workspaceIds: ['ws_1'] }]);
      await store.sessions.replace(null, session('usr_1', 'h1', { nextPath: '/dashboard/keys' }));
      const view = await store.sessions.view('h1');
      expect(view?.session).toEqual(session('usr_1', 'h1', { nextPath: '/dashboard/keys' }));
      expect(view?.user).toEqual(await store.users.byId('usr_1'));
      expect(view?.roles).toEqual([{ projectId: 'proj_a', role: 'admin', workspaceIds: ['ws_1'] }]);
      expect(await store.sessions.view('unknown')).toBeNull();
    });

    it('replaces a session by a new one, and only moves last-seen forward', async () => {
      await newUser('usr_1');
      await store.sessions.replace(null, session('usr_1', 'h1', { stage: 'totp' }));
      await store.sessions.replace('h1', session('usr_1', 'h2'));
      expect(await store.sessions.find('h1')).toBeNull();
      await store.sessions.touch('h2', T0 + 60_000);
      await store.sessions.touch('h2', T0 + 30_000);
      expect((await store.sessions.find('h2'))?.lastSeenAt).toBe(T0 + 60_000);
    });

    it("lists a user's signed-in sessions newest first, and revokes one only for its own user", async () => {
      await newUser('usr_1');
      await newUser('usr_2');
      await store.sessions.replace(null, session('usr_1', 'h1', { createdAt: T0 }));
      await store.sessions.replace(null, session('usr_1', 'h2', { createdAt: T0 + 1 }));
      await store.sessions.replace(null, session('usr_1', 'h3', { stage: 'totp' }));
      expect((await store.sessions.listOfUser('usr_1')).map((s) => s.idHash)).toEqual(['h2', 'h1']);
      expect(await store.sessions.removeOfUser('usr_2', 'h1')).toBe(false);
      expect(await store.sessions.removeOfUser('usr_1', 'h1')).toBe(true);
      await store.sessions.remove('h2');
      expect(await store.sessions.listOfUser('usr_1')).toEqual([]);
      await store.sessions.removeAllOfUser('usr_1');
      expect(await store.sessions.find('h3')).toBeNull();
    });

    it('sweeps idle, too old and abandoned sign-ins, and keeps the rest', async () => {
      await newUser('usr_1');
      await store.sessions.replace(null, session('usr_1', 'idle', { createdAt: T0 + 50, lastSeenAt: T0 + 5 }));
      await store.sessions.replace(null, session('usr_1', 'old', { createdAt: T0, lastSeenAt: T0 + 100 }));
      await store.sessions.replace(null, session('usr_1', 'live', { createdAt: T0 + 50, lastSeenAt: T0 + 100 }));
      const flow = { providerId: 'okta', state: 's', nonce: 'n', codeVerifier: 'v', connectUserId: null, nextPath: null };
      await store.sessions.insertFlow({ ...flow, idHash: 'f-old', createdAt: T0 });
      await store.sessions.insertFlow({ ...flow, idHash: 'f-new', createdAt: T0 + 100 });
      await store.sessions.removeStale(T0 + 10, T0 + 10, T0 + 10);
      expect(await store.sessions.find('idle')).toBeNull();
      expect(await store.sessions.find('old')).toBeNull();
      expect(await store.sessions.find('live')).not.toBeNull();
      expect(await store.sessions.takeFlow('f-old')).toBeNull();
      expect(await store.sessions.takeFlow('f-new')).not.toBeNull();
    });

    it('hands an OpenID Connect flow to exactly one of several callers taking it at once', async () => {
      await newUser('usr_1');
      const flow = { idHash: 'f1', providerId: 'okta', state: 's', nonce: 'n', codeVerifier: 'v', connectUserId: 'usr_1', nextPath: '/dashboard/account', createdAt: T0 };
      await store.sessions.insertFlow(flow);
      const taken = await Promise.all(Array.from({ length: 6 }, () => store.sessions.takeFlow('f1')));
      expect(taken.filter((f) => f !== null)).toEqual([flow]);
    });
  });
}
