/**
 * The members page's handlers: list (every role reads it), add, change a role, remove (owners only: the
 * route's gate answers 403 to admins and members before the form is read). Each runs
 * auth/project-members.ts; a refusal (the last owner, an unknown workspace, a taken membership) comes
 * back as the page with the reason.
 */
import type { RoleChoice } from '../auth/project-members.js';
import type { Notice } from './layout.js';
import { html } from './markup.js';
import { renderMembersPage, type MembersPageData } from './members-page.js';
import { projectRoute, readForm, refusalNotice, type PageDef, type PageDeps, type ProjectPage } from './page-kit.js';
import { projectDocument } from './layout.js';
import { projectPath, PROJECTS_PATH } from './paths.js';

const choiceOf = (form: URLSearchParams): RoleChoice => ({
  role: form.get('role') ?? '',
  workspaceIds: form.get('workspace_mode') === 'selected' ? form.getAll('workspaces') : null,
});

export function membersPages(deps: PageDeps): PageDef[] {
  const members = deps.members;
  const route = (method: 'GET' | 'POST', path: string, run: (page: ProjectPage) => Promise<void> | void): PageDef =>
    projectRoute(deps, { method, path: `/members${path}`, write: method === 'POST' ? 'owner' : false }, run);
  // Every workspace of the project: an owner may grant any of them.
  const workspacesOf = (page: ProjectPage) => [...deps.catalog.workspaces(page.project.id).values()].map((w) => ({ id: w.id, name: w.name }));
  const known = (page: ProjectPage): ReadonlySet<string> => new Set(workspacesOf(page).map((w) => w.id));

  const render = async (page: ProjectPage, status: number, notice: Notice | null, extra: Partial<MembersPageData> = {}): Promise<void> => {
    if (!members) {
      page.send(status, projectDocument(page.frame('members', notice), html`<p class="muted">Members are managed with <code>switchboard users</code> on this gateway.</p>`));
      return;
    }
    const data: MembersPageData = { members: await members.list(page.project.id), workspaces: workspacesOf(page), owner: page.role === 'owner', ...extra };
    page.send(status, renderMembersPage(page.frame('members', notice), data));
  };
  /** Runs a change; its refusal is shown on the page with the API's status. */
  const attempt = async (page: ProjectPage, form: URLSearchParams | null, change: () => Promise<{ notice: Notice; extra?: Partial<MembersPageData> } | { redirect: string }>): Promise<void> => {
    try {
      const done = await change();
      // A change to the owner's own role: the page is read again with what they now hold.
      if ('redirect' in done) {
        page.ctx.reply.setHeader('Location', done.redirect);
        page.ctx.reply.empty(303);
        return;
      }
      await render(page, 200, done.notice, done.extra);
    } catch (err) {
      const { status, notice } = refusalNotice(err);
      await render(page, status, notice, { form });
    }
  };

  return [
    route('GET', '', (page) => render(page, 200, null)),
    route('POST', '', async (page) => {
      const form = await readForm(page.ctx);
      await attempt(page, form, async () => {
        if (!members) throw new Error('members page without its use cases');
        const email = form.get('email') ?? '';
        const name = (form.get('name') ?? '').trim();
        const added = await members.add(page.project.id, { email, name: name === '' ? null : name, ...choiceOf(form) }, known(page));
        const who = added.member.user.email;
        return {
          notice: { kind: 'ok', text: `${who} is now ${added.member.role} of ${page.project.name}.` },
          extra: added.password === null ? {} : { created: { email: who, password: added.password } },
        };
      });
    }),
    route('POST', '/:user/role', async (page) => {
      const form = await readForm(page.ctx);
      await attempt(page, null, async () => {
        if (!members) throw new Error('members page without its use cases');
        const m = await members.change(page.project.id, page.params.user ?? '', choiceOf(form), known(page));
        if (m.user.id === page.principal.userId) return { redirect: projectPath(page.project.id, 'members') };
        return { notice: { kind: 'ok', text: `${m.user.email} is now ${m.role} of ${page.project.name}.` } };
      });
    }),
    route('POST', '/:user/remove', async (page) => {
      await readForm(page.ctx);
      await attempt(page, null, async () => {
        if (!members) throw new Error('members page without its use cases');
        const { member, keysRevoked } = await members.remove(page.project.id, page.params.user ?? '');
        // The owner took themselves out: the project's pages are not theirs any more.
        if (member.user.id === page.principal.userId) return { redirect: PROJECTS_PATH };
        return { notice: { kind: 'ok', text: `${member.user.email} was removed from ${page.project.name}; ${keysRevoked} API key(s) of theirs here revoked.` } };
      });
    }),
  ];
}
