/**
 * Signed-in dashboard users for the page tests, through test/helpers/dashboard-session.ts (the real
 * `switchboard users create`, then the password form), in the shape the page tests use.
 */
import { createDashboardUser, signIn } from '../helpers/dashboard-session.js';

export interface DashboardSession {
  readonly userId: string;
  /** `name=value`, ready for a Cookie header. */
  readonly cookie: string;
  readonly csrf: string;
}

export interface TestUser {
  readonly email: string;
  readonly projectId: string;
  readonly role: 'owner' | 'admin' | 'member';
  /** null: every workspace of the project. */
  readonly workspaceIds?: readonly string[] | null;
}

export async function signInAs(gw: { readonly url: string; readonly dbPath: string }, u: TestUser): Promise<DashboardSession> {
  const user = await createDashboardUser(gw.dbPath, { email: u.email, role: u.role, project: u.projectId, ...(u.workspaceIds ? { workspaces: u.workspaceIds } : {}) });
  const { cookie, csrfToken } = await signIn(gw.url, user);
  return { userId: user.id, cookie, csrf: csrfToken };
}
