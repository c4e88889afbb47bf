/** The projects overview (also where `/dashboard` leads) and each project's overview page. */
import { DAY_MS } from '../../core/store/usage-store.js';
import { projectRoute, sendHtml, userPageRoute, type PageDef, type PageDeps } from './page-kit.js';
import { PROJECTS_PATH } from './paths.js';
import { renderProjectOverview, renderProjectsPage, type ProjectSummary } from './projects-page.js';

export function projectsPages(deps: PageDeps): PageDef[] {
  return [
    // `/dashboard` itself (what a person types): the projects page, or the sign-in page first.
    userPageRoute('/dashboard', (ctx) => {
      ctx.reply.setHeader('Location', PROJECTS_PATH);
      ctx.reply.empty(303);
    }),
    userPageRoute(PROJECTS_PATH, (ctx, principal) => {
      const projects = principal.projectIds.flatMap((id): ProjectSummary[] => {
        const role = principal.roleIn(id);
        const p = deps.catalog.project(id);
        return role && p ? [{ id: p.id, name: p.name, role, endpoints: deps.catalog.endpoints(p.id).length }] : [];
      });
      sendHtml(ctx, 200, renderProjectsPage(principal, projects));
    }),
    projectRoute(deps, { method: 'GET', path: '', write: false }, async (page) => {
      const id = page.project.id;
      const today = Math.floor(deps.now() / DAY_MS) * DAY_MS;
      const usage = await deps.usage.page({ projectId: id, start: today, end: today + DAY_MS, groupBy: 'day', limit: null, after: null });
      const readable = page.principal.workspacesIn(id);
      const pending = (await deps.approvals?.list(id, { limit: 100, after: null, status: 'pending', workspaceIds: readable === 'all' ? null : readable }))?.items.length ?? 0;
      page.send(
        200,
        renderProjectOverview(page.frame('overview'), {
          endpoints: deps.catalog.endpoints(id),
          workspaces: page.workspaces,
          activeKeys: (await deps.keys.list(id)).filter((k) => k.status === 'active').length,
          pendingApprovals: pending,
          requestsToday: usage.items.reduce((n, t) => n + t.requests, 0),
        }),
      );
    }),
  ];
}
