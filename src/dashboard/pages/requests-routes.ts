/** The Requests page's handlers: a page of the ledger's rows through the usage port, and one row's detail. */
import { REQUEST_STATUSES } from '../../core/store/usage-store.js';
import { dayRange, projectLabels } from './ledger-kit.js';
import { projectRoute, sendHtml, type PageDef, type PageDeps } from './page-kit.js';
import { filterQuery, renderRequestDetail, renderRequestsPage, type RequestFilters } from './requests-page.js';
import { documentOf } from './layout.js';
import { html } from './markup.js';

export const REQUESTS_PER_PAGE = 50;
const DEFAULT_DAYS = 7;
/** A decision is written before its turn is dispatched; the ledger row when it ends. Replicas' clocks may differ a little. */
const DECISION_SLACK_MS = 60_000;
const CURSOR = /^(\d{1,15})_(\d{1,15})$/;
const LEDGER_ID = /^\d{1,15}$/;

export function requestsPages(deps: PageDeps): PageDef[] {
  return [
    projectRoute(deps, { method: 'GET', path: '/requests', write: false }, async (page) => {
      const q = page.ctx.req.searchParams();
      const id = page.project.id;
      const labels = await projectLabels(deps, id);
      // A choice the page does not offer (a hand-edited address) filters on nothing rather than failing.
      const pick = (name: string, allowed: readonly string[]): string | null => {
        const v = q.get(name);
        return v !== null && allowed.includes(v) ? v : null;
      };
      const filters: RequestFilters = {
        range: dayRange(q, deps.now(), DEFAULT_DAYS),
        keyId: q.get('key') || null,
        model: pick('model', labels.models) ?? (q.get('model') || null),
        status: pick('status', REQUEST_STATUSES),
      };
      const cursor = CURSOR.exec(q.get('before') ?? '');
      const before = cursor ? { createdAt: Number(cursor[1]), id: Number(cursor[2]) } : null;
      const { items, hasMore } = await deps.usage.requests({
        projectId: id,
        start: filters.range.start,
        end: filters.range.end,
        keyId: filters.keyId,
        model: filters.model,
        status: filters.status,
        limit: REQUESTS_PER_PAGE,
        before,
      });
      const last = items.at(-1);
      let olderQuery: string | null = null;
      if (hasMore && last) {
        const older = filterQuery(filters);
        older.set('before', `${last.createdAt}_${last.id}`);
        olderQuery = older.toString();
      }
      page.send(200, renderRequestsPage(page.frame('requests'), { filters, rows: items, labels, olderQuery, paged: before !== null }));
    }),
    projectRoute(deps, { method: 'GET', path: '/requests/:request', write: false }, async (page) => {
      const raw = page.params.request ?? '';
      const row = LEDGER_ID.test(raw) ? await deps.usage.request(page.project.id, Number(raw)) : null;
      if (row === null) {
        sendHtml(page.ctx, 404, documentOf(page.principal, 'Not found', html`<h1>Not found</h1><p>This project has no such request.</p>`));
        return;
      }
      const [labels, decision] = await Promise.all([
        projectLabels(deps, page.project.id),
        row.route === 'chat' ? null : deps.decisions.forRequest(page.project.id, row.requestId, row.createdAt - row.latencyMs - DECISION_SLACK_MS, row.createdAt + DECISION_SLACK_MS),
      ]);
      page.send(200, renderRequestDetail(page.frame('requests'), row, labels, decision));
    }),
  ];
}
