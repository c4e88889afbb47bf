/**
 * The usage and cost page's handlers: the usage API's totals per day, key, model and endpoint over a range
 * of UTC days, through the same port, as the page or as CSV (the page's tables, cell for cell).
 */
import type { UsageGroupBy } from '../../core/store/usage-store.js';
import { dayRange, projectLabels, type DayRange } from './ledger-kit.js';
import { projectRoute, type PageDef, type PageDeps, type ProjectPage } from './page-kit.js';
import { costCsv, costTables, renderUsagePage, USAGE_DAYS, type UsagePageData } from './usage-page.js';

async function usageData(deps: PageDeps, page: ProjectPage): Promise<UsagePageData> {
  const projectId = page.project.id;
  const range: DayRange = dayRange(page.ctx.req.searchParams(), deps.now(), USAGE_DAYS);
  const totals = (groupBy: UsageGroupBy) => deps.usage.page({ projectId, start: range.start, end: range.end, groupBy, limit: null, after: null }).then((p) => p.items);
  const [byDay, byKey, byModel, byEndpoint, labels] = await Promise.all([totals('day'), totals('key'), totals('model'), totals('endpoint'), projectLabels(deps, projectId)]);
  return { range, byDay, byKey, byModel, byEndpoint, labels };
}

export function usagePages(deps: PageDeps): PageDef[] {
  return [
    projectRoute(deps, { method: 'GET', path: '/usage', write: false }, async (page) => {
      page.send(200, renderUsagePage(page.frame('usage'), await usageData(deps, page)));
    }),
    projectRoute(deps, { method: 'GET', path: '/usage.csv', write: false }, async (page) => {
      const data = await usageData(deps, page);
      const reply = page.ctx.reply;
      reply.setHeader('Cache-Control', 'no-store');
      reply.setHeader('Content-Disposition', `attachment; filename="usage-${page.project.id.replace(/[^A-Za-z0-9_-]/g, '_')}-${data.range.from}-${data.range.to}.csv"`);
      reply.send(200, costCsv(costTables(data)), 'text/csv; charset=utf-8');
    }),
  ];
}
