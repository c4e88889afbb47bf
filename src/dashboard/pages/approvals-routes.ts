/**
 * The approvals page's handlers: approvals of the workspaces the user reads; accept and reject through
 * the use case the exec approvals routes run, deciding as the user (`decided_by` is the user's id), who
 * may not decide what one of their own keys asked for (docs/exec.md "Who decides").
 */
import type { Decider } from '../../app/approval-decisions.js';
import type { ApprovalView } from '../../app/approval-views.js';
import type { Approval } from '../../core/exec/approval-machine.js';
import { parseRejectApproval } from '../../schemas/exec-invocations.js';
import type { Notice } from './layout.js';
import { html } from './markup.js';
import { projectRoute, readForm, refusalNotice, type PageDef, type PageDeps, type ProjectPage } from './page-kit.js';
import { renderApprovalsPage } from './approvals-page.js';
import { projectDocument } from './layout.js';

const SHOWN = 50;

export function approvalsPages(deps: PageDeps): PageDef[] {
  const route = (method: 'GET' | 'POST', path: string, run: (page: ProjectPage) => Promise<void> | void): PageDef =>
    projectRoute(deps, { method, path: `/approvals${path}`, write: method === 'POST' }, run);
  const render = async (page: ProjectPage, status: number, notice: Notice | null): Promise<void> => {
    const approvals = deps.approvals;
    if (!approvals) {
      page.send(status, projectDocument(page.frame('approvals', notice), html`<p class="muted">The execution surface is not running on this gateway.</p>`));
      return;
    }
    const readable = page.principal.workspacesIn(page.project.id);
    const workspaceIds = readable === 'all' ? null : readable;
    const list = async (state: string | null): Promise<Approval[]> => (await approvals.list(page.project.id, { limit: SHOWN, after: null, status: state, workspaceIds })).items;
    // Without the views (a gateway wired without them), the approvals alone: names fall back to ids.
    const describe = async (items: Approval[]): Promise<ApprovalView[]> =>
      deps.approvalViews
        ? deps.approvalViews.describe(page.project.id, items)
        : items.map((a) => ({ approval: a, arguments: null, agent: null, requesterKey: null, requesterUser: null, decider: a.decidedBy === null ? null : { id: a.decidedBy, name: a.decidedBy } }));
    const pending = await describe(await list('pending'));
    const decided = await describe((await list(null)).filter((a) => a.state !== 'pending'));
    page.send(status, renderApprovalsPage(page.frame('approvals', notice), { pending, decided, writable: page.writable, now: deps.now() }));
  };
  // The signed-in user decides; who may is app/approval-decisions.ts's rule (owner or admin, not who asked).
  const decider = (page: ProjectPage): Decider => ({
    id: page.principal.userId,
    keyId: null,
    userId: page.principal.userId,
    scopes: null,
    issuedBy: null,
    mayUse: (w) => page.mayReadWorkspace(w),
    label: 'your account',
  });

  return [
    route('GET', '', (page) => render(page, 200, null)),
    route('POST', '/:approval/accept', async (page) => {
      await readForm(page.ctx);
      try {
        const a = await deps.approvals?.accept(page.project.id, page.params.approval ?? '', decider(page));
        await render(page, 200, a ? { kind: 'ok', text: `Approved ${a.toolName}; the invocation runs.` } : null);
      } catch (err) {
        const { status, notice } = refusalNotice(err);
        await render(page, status, notice);
      }
    }),
    route('POST', '/:approval/reject', async (page) => {
      const form = await readForm(page.ctx);
      const typed = (form.get('reason') ?? '').trim();
      try {
        // The reject route's own body rules (length), read from the form.
        const { reason } = parseRejectApproval(Buffer.from(JSON.stringify(typed === '' ? {} : { reason: typed })));
        const a = await deps.approvals?.reject(page.project.id, page.params.approval ?? '', decider(page), reason);
        await render(page, 200, a ? { kind: 'ok', text: `Rejected ${a.toolName}; the invocation fails.` } : null);
      } catch (err) {
        const { status, notice } = refusalNotice(err);
        await render(page, status, notice);
      }
    }),
  ];
}
