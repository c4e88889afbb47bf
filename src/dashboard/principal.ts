/**
 * The contract between dashboard sign-in (src/dashboard/auth/, issue 22) and the dashboard pages
 * (src/dashboard/pages/): a page handler receives the signed-in user as a `DashboardPrincipal`, already
 * checked by the session guard (cookie, idle and absolute expiry, CSRF on writes), and never reads the
 * cookie itself. Pages decide what the user may see and do from `roleIn`.
 */

export type ProjectRole = 'owner' | 'admin' | 'member';

export interface DashboardPrincipal {
  /** `usr_<id>` */
  readonly userId: string;
  readonly email: string;
  readonly name: string;
  /** The per-session CSRF token: pages put it in `<meta name="csrf-token">` and in form fields. */
  readonly csrfToken: string;
  /** The user's role in a project, or null when the user has none there (the page answers 404). */
  roleIn(projectId: string): ProjectRole | null;
  /** The projects the user has a role in, in a stable order. */
  readonly projectIds: readonly string[];
  /**
   * The workspaces of a project the user can read: `'all'` or an explicit list. A key the user creates
   * without a workspace list reaches exactly these (SPEC Authentication 10).
   */
  workspacesIn(projectId: string): 'all' | readonly string[];
}

/** Members read; admins and owners write (issue 22). */
export const canWrite = (role: ProjectRole | null): boolean => role === 'owner' || role === 'admin';
