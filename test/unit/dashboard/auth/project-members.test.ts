/** The members use cases (src/dashboard/auth/project-members.ts) on a real SQLite identity store. */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createProjectMembers, type ProjectMembers } from '../../../../src/dashboard/auth/project-members.js';
import type { UsersStore } from '../../../../src/core/store/identity-store.js';
import { GatewayError } from '../../../../src/errors.js';
import { openDatabase, type Db } from '../../../../src/store/db.js';
import { createIdentityStore } from '../../../../src/store/identity/identity-store.js';
import { createSqliteRunner } from '../../../../src/store/sql/sqlite-runner.js';
import { tempDir } from '../../../helpers/processes.js';

const WS = new Set(['ws_a1', 'ws_b2']);
let dir: string;
let db: Db;
let users: UsersStore;
let members: ProjectMembers;
let reloads = 0;

beforeEach(async () => {
  dir = tempDir();
  db = openDatabase(join(dir, 'switchboard.db'));
  users = createIdentityStore(createSqliteRunner(db)).users;
  members = createProjectMembers({ users, now: () => 1_700_000_000_000, reloadCredentials: () => void (reloads += 1) });
  await users.create({ id: 'usr_own', email: 'own@example.test', name: 'Own', passwordHash: 'h', now: 0 }, [{ projectId: 'proj_a', role: 'owner', workspaceIds: null }]);
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const refusal = async (p: Promise<unknown>): Promise<{ code: string; param: string | null }> => {
  const err = await p.then(() => null, (e: unknown) => e);
  if (!(err instanceof GatewayError)) throw new Error(`expected a GatewayError, got ${String(err)}`);
  return { code: err.code, param: err.param };
};

describe('project members', () => {
  it('adds a new user with a generated password, and an existing one without touching theirs', async () => {
    const fresh = await members.add('proj_a', { email: ' New@Example.test ', name: null, role: 'admin', workspaceIds: ['ws_b2'] }, WS);
    expect(fresh.password).toMatch(/^[A-Za-z0-9_-]{20}$/);
    expect(fresh.member).toMatchObject({ role: 'admin', workspaceIds: ['ws_b2'], user: { email: 'new@example.test' } });
    await users.create({ id: 'usr_old', email: 'old@example.test', name: 'Old', passwordHash: 'kept', now: 1_800_000_000_000 }, []);
    const old = await members.add('proj_a', { email: 'old@example.test', name: 'ignored', role: 'member', workspaceIds: null }, WS);
    expect(old.password).toBeNull();
    expect((await users.byId('usr_old'))?.passwordHash).toBe('kept');
    expect((await members.list('proj_a')).map((m) => [m.user.email, m.role])).toEqual([
      ['own@example.test', 'owner'],
      ['new@example.test', 'admin'],
      ['old@example.test', 'member'],
    ]);
    expect(await refusal(members.add('proj_a', { email: 'old@example.test', name: null, role: 'admin', workspaceIds: null }, WS))).toEqual({ code: 'invalid_state', param: 'email' });
    expect(reloads).toBeGreaterThan(0);
  });

  it('refuses an unknown role, an empty or unknown workspace list, and a bad e-mail, naming the field', async () => {
    const add = (over: object) => members.add('proj_a', { email: 'x@example.test', name: null, role: 'member', workspaceIds: null, ...over }, WS);
    expect(await refusal(add({ role: 'root' }))).toEqual({ code: 'invalid_body', param: 'role' });
    expect(await refusal(add({ workspaceIds: [] }))).toEqual({ code: 'invalid_body', param: 'workspaces' });
    expect(await refusal(add({ workspaceIds: ['ws_other'] }))).toEqual({ code: 'invalid_body', param: 'workspaces' });
    expect(await refusal(add({ email: 'not an address' }))).toEqual({ code: 'invalid_body', param: 'email' });
    expect((await members.list('proj_a')).length).toBe(1);
  });

  it('keeps the last owner, and lets an owner go once another owner exists', async () => {
    expect(await refusal(members.remove('proj_a', 'usr_own'))).toEqual({ code: 'invalid_state', param: 'role' });
    expect(await refusal(members.change('proj_a', 'usr_own', { role: 'admin', workspaceIds: null }, WS))).toEqual({ code: 'invalid_state', param: 'role' });
    const second = await members.add('proj_a', { email: 'two@example.test', name: null, role: 'member', workspaceIds: null }, WS);
    await members.change('proj_a', second.member.user.id, { role: 'owner', workspaceIds: null }, WS);
    expect((await members.remove('proj_a', 'usr_own')).member.user.id).toBe('usr_own');
    expect(await users.roles('usr_own')).toEqual([]);
    expect(await refusal(members.remove('proj_a', 'usr_own'))).toEqual({ code: 'not_found', param: 'user_id' });
  });
});
