/**
 * Signed-in dashboard users for the page tests: the user is written into the gateway's store (the store
 * the `switchboard users` command writes), then signs in through the real password form, and the session
 * cookie and the page's CSRF token are read back as a browser would have them.
 */
import { randomBytes } from 'node:crypto';
import { hashPassword } from '../../src/dashboard/auth/passwords.js';
import { openDatabase } from '../../src/store/db.js';
import { createUsersRepo, type UserRole } from '../../src/store/users-repo.js';

export interface DashboardSession {
  readonly userId: string;
  readonly email: string;
  readonly password: string;
  /** `name=value`, ready for a Cookie header. */
  readonly cookie: string;
  readonly csrf: string;
}

export interface TestUser {
  readonly email: string;
  readonly roles: readonly UserRole[];
  readonly password?: string;
}

/** Creates the user in the store of a running gateway; returns its id and password. */
export async function createTestUser(gw: { readonly dbPath: string }, u: TestUser): Promise<{ userId: string; password: string }> {
  const password = u.password ?? `pw-${randomBytes(9).toString('base64url')}`;
  const userId = `usr_${randomBytes(12).toString('hex')}`;
  const passwordHash = await hashPassword(password);
  const db = openDatabase(gw.dbPath);
  try {
    createUsersRepo(db).create({ id: userId, email: u.email, name: u.email.split('@')[0] ?? u.email, passwordHash, now: Date.now() }, u.roles);
  } finally {
    db.close();
  }
  return { userId, password };
}

/** Signs in with the password form (no second factor) and reads the session cookie and CSRF token. */
export async function signInWithPassword(gw: { readonly url: string }, email: string, password: string): Promise<Pick<DashboardSession, 'cookie' | 'csrf'>> {
  const res = await fetch(`${gw.url}/dashboard/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: gw.url },
    body: new URLSearchParams({ email, password }).toString(),
    redirect: 'manual',
  });
  const cookie = res.headers.getSetCookie().map((c) => c.split(';')[0] ?? '').find((c) => c.includes('session=') && !c.endsWith('='));
  if (res.status !== 303 || !cookie) throw new Error(`sign-in failed: ${res.status} ${await res.text()}`);
  const page = await fetch(`${gw.url}/dashboard/projects`, { headers: { cookie }, redirect: 'manual' });
  const csrf = (await page.text()).match(/<meta name="csrf-token" content="([^"]+)">/)?.[1];
  if (!csrf) throw new Error(`no csrf-token meta on /dashboard/projects (status ${page.status})`);
  return { cookie, csrf };
}

export async function signInAs(gw: { readonly url: string; readonly dbPath: string }, u: TestUser): Promise<DashboardSession> {
  const { userId, password } = await createTestUser(gw, u);
  return { userId, email: u.email, password, ...(await signInWithPassword(gw, u.email, password)) };
}
