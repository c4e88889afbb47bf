/**
 * The operator's user commands (`switchboard users`, cli-users.ts): create with a first project role,
 * list, delete (revoking the user's API keys: SPEC "API key" states, 401 key_inactive), reset a password
 * (ending every session: SPEC Authentication 14). Refusals are UserAdminErrors naming the flag's field.
 */
import { randomBytes } from 'node:crypto';
import type { ProjectRole, UserRecord, UsersStore } from '../../core/store/identity-store.js';
import { hashPassword, passwordProblem } from './passwords.js';

export class UserAdminError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

export const newUserId = (): string => `usr_${randomBytes(12).toString('hex')}`;

const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** A new password, checked and hashed (async: scrypt runs off the event loop, before any transaction). */
export async function newPasswordHash(password: string): Promise<string> {
  const problem = passwordProblem(password);
  if (problem) throw new UserAdminError('password', problem);
  return hashPassword(password);
}

export interface NewUser {
  readonly email: string;
  readonly name: string | null;
  readonly passwordHash: string;
  readonly role: ProjectRole;
  readonly projectId: string;
  /** null: every workspace of the project. */
  readonly workspaceIds: readonly string[] | null;
}

export async function createUser(users: UsersStore, u: NewUser, now: number): Promise<UserRecord> {
  const email = u.email.trim().toLowerCase();
  if (!EMAIL.test(email) || email.length > 254) throw new UserAdminError('email', 'is not an e-mail address');
  if (await users.byEmail(email)) throw new UserAdminError('email', `a user with ${email} already exists`);
  const id = newUserId();
  await users.create(
    { id, email, name: u.name?.trim() || email, passwordHash: u.passwordHash, now },
    [{ projectId: u.projectId, role: u.role, workspaceIds: u.workspaceIds }],
  );
  const created = await users.byId(id);
  if (!created) throw new Error('the new user was not stored');
  return created;
}

/** By id (`usr_...`) or e-mail. */
export function findUser(users: UsersStore, ref: string): Promise<UserRecord | null> {
  return ref.startsWith('usr_') ? users.byId(ref) : users.byEmail(ref.trim().toLowerCase());
}

export function resetPassword(users: UsersStore, user: UserRecord, passwordHash: string, now: number): Promise<void> {
  return users.setPassword(user.id, passwordHash, now);
}
