/**
 * A project's members (SPEC Authentication 10; docs/decisions.md "Dashboard members"): the users with a role
 * in it, the role, and the workspaces each reads. The dashboard's members page runs these; the users
 * themselves are made as `switchboard users create` makes them (user-admin.ts `createUser`).
 *
 * Rules: an e-mail names one user across projects (adding an existing user gives them a role here, and
 * never touches their password); a new user gets a generated password, shown once to the owner adding
 * them; the project always keeps an owner (the last one can be neither demoted nor removed, themselves
 * included); a member taken out loses the role and the API keys they own in this project are revoked with
 * it (their keys elsewhere stay). Who may change members (owners) is the page's gate.
 *
 * Refusals are GatewayErrors naming the form field, as the pages show every refusal.
 */
import { randomBytes } from 'node:crypto';
import type { ProjectRole, UserRecord, UsersStore } from '../../core/store/identity-store.js';
import { GatewayError } from '../../errors.js';
import { createUser, newPasswordHash, UserAdminError } from './user-admin.js';

export const PROJECT_ROLES: readonly ProjectRole[] = ['owner', 'admin', 'member'];

export interface Member {
  readonly user: { readonly id: string; readonly email: string; readonly name: string; readonly twoFactor: boolean };
  readonly role: ProjectRole;
  /** null: every workspace of the project, now and later. */
  readonly workspaceIds: readonly string[] | null;
}

/** What the form asks for a role: the role, and the workspaces it reads (null: all). */
export interface RoleChoice {
  readonly role: string;
  readonly workspaceIds: readonly string[] | null;
}

export interface NewMember extends RoleChoice {
  readonly email: string;
  readonly name: string | null;
}

export interface ProjectMembersDeps {
  readonly users: UsersStore;
  readonly now: () => number;
  /** A role decides what the user's own API keys reach: cached credentials are dropped after a change. */
  readonly reloadCredentials: () => void | Promise<void>;
}

const memberOf = (u: UserRecord, role: ProjectRole, workspaceIds: readonly string[] | null): Member => ({
  user: { id: u.id, email: u.email, name: u.name, twoFactor: u.totpSealed !== null },
  role,
  workspaceIds,
});

/** The role and workspaces, checked against the project's workspaces. */
function checkedChoice(c: RoleChoice, workspaces: ReadonlySet<string>): { role: ProjectRole; workspaceIds: readonly string[] | null } {
  const role = PROJECT_ROLES.find((r) => r === c.role);
  if (!role) throw new GatewayError('invalid_body', { param: 'role', message: `role must be owner, admin or member, not ${JSON.stringify(c.role.slice(0, 40))}.` });
  if (c.workspaceIds === null) return { role, workspaceIds: null };
  if (c.workspaceIds.length === 0) {
    throw new GatewayError('invalid_body', { param: 'workspaces', message: 'Selected workspaces needs at least one workspace ticked; or choose every workspace.' });
  }
  const unknown = c.workspaceIds.find((w) => !workspaces.has(w));
  if (unknown !== undefined) throw new GatewayError('invalid_body', { param: 'workspaces', message: `This project has no workspace ${JSON.stringify(unknown.slice(0, 64))}.` });
  return { role, workspaceIds: [...new Set(c.workspaceIds)] };
}

export function createProjectMembers(deps: ProjectMembersDeps) {
  const { users } = deps;

  const list = async (projectId: string): Promise<Member[]> => {
    const all = await users.list();
    const rows = await Promise.all(all.map(async (u) => ({ u, role: (await users.roles(u.id)).find((r) => r.projectId === projectId) })));
    return rows.flatMap(({ u, role }) => (role ? [memberOf(u, role.role, role.workspaceIds)] : []));
  };

  const member = async (projectId: string, userId: string): Promise<Member> => {
    const found = (await list(projectId)).find((m) => m.user.id === userId);
    if (!found) throw new GatewayError('not_found', { param: 'user_id', message: `Project ${projectId} has no member ${JSON.stringify(userId.slice(0, 64))}.` });
    return found;
  };

  /** 409 when `userId` is the only owner and would stop being one. */
  const keepsAnOwner = async (projectId: string, target: Member, what: string): Promise<void> => {
    if (target.role !== 'owner') return;
    const owners = (await list(projectId)).filter((m) => m.role === 'owner');
    if (owners.length <= 1) {
      throw new GatewayError('invalid_state', {
        param: 'role',
        message: `${target.user.email} is the only owner of ${projectId}, so cannot be ${what}: make another member an owner first.`,
      });
    }
  };

  return {
    list,
    /**
     * A role for the user with this e-mail; a new user when there is none, with a generated password
     * returned once (null for an existing user). 409 when they are already a member.
     */
    async add(projectId: string, m: NewMember, workspaces: ReadonlySet<string>): Promise<{ member: Member; password: string | null }> {
      const choice = checkedChoice(m, workspaces);
      const email = m.email.trim().toLowerCase();
      const existing = email === '' ? null : await users.byEmail(email);
      if (existing) {
        if ((await users.roles(existing.id)).some((r) => r.projectId === projectId)) {
          throw new GatewayError('invalid_state', { param: 'email', message: `${email} is already a member of ${projectId}: change their role in the list instead.` });
        }
        await users.setRole(existing.id, { projectId, ...choice });
        await deps.reloadCredentials();
        return { member: memberOf(existing, choice.role, choice.workspaceIds), password: null };
      }
      // 20 characters of base64url: 120 bits, past the 12-character minimum; the user changes it on the account page.
      const password = randomBytes(15).toString('base64url');
      try {
        const user = await createUser(users, { email, name: m.name, passwordHash: await newPasswordHash(password), projectId, ...choice }, deps.now());
        return { member: memberOf(user, choice.role, choice.workspaceIds), password };
      } catch (err) {
        if (err instanceof UserAdminError) throw new GatewayError('invalid_body', { param: err.field, message: `${err.field} ${err.message}.` });
        throw err;
      }
    },
    /** A new role or workspace list for a member; the last owner stays an owner. */
    async change(projectId: string, userId: string, c: RoleChoice, workspaces: ReadonlySet<string>): Promise<Member> {
      const choice = checkedChoice(c, workspaces);
      const target = await member(projectId, userId);
      if (choice.role !== 'owner') await keepsAnOwner(projectId, target, `made ${choice.role}`);
      await users.setRole(userId, { projectId, ...choice });
      await deps.reloadCredentials();
      return { ...target, ...choice };
    },
    /** Out of the project, their keys here revoked; the last owner stays. */
    async remove(projectId: string, userId: string): Promise<{ member: Member; keysRevoked: number }> {
      const target = await member(projectId, userId);
      await keepsAnOwner(projectId, target, 'removed');
      const { keysRevoked } = await users.removeRole(userId, projectId, deps.now());
      await deps.reloadCredentials();
      return { member: target, keysRevoked };
    },
  };
}

export type ProjectMembers = ReturnType<typeof createProjectMembers>;
