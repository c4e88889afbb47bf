/** The usage page's handler: the usage API's totals per day and per endpoint, through the same reader. */
import { DAY_MS } from '../../store/usage-totals.js';
import { projectRoute, type PageDef, type PageDeps } from './page-kit.js';
import { renderUsagePage, USAGE_DAYS } from './usage-page.js';

export function usagePages(deps: PageDeps): PageDef[] {
  return [
    projectRoute(deps, { method: 'GET', path: '/usage', write: false }, async (page) => {
      const id = page.project.id;
      const today = Math.floor(deps.now() / DAY_MS) * DAY_MS;
      const start = today - (USAGE_DAYS - 1) * DAY_MS;
      const end = today + DAY_MS;
      const [byDay, byEndpoint] = await Promise.all([
        deps.usage.page({ projectId: id, start, end, groupBy: 'day', limit: null, after: null }),
        deps.usage.page({ projectId: id, start, end, groupBy: 'endpoint', limit: null, after: null }),
      ]);
      const slugs = new Map(deps.catalog.endpoints(id).map((e) => [e.id, e.slug]));
      page.send(
        200,
        renderUsagePage(page.frame('usage'), {
          startDay: start,
          days: USAGE_DAYS,
          byDay: byDay.items,
          byEndpoint: byEndpoint.items,
          endpointLabel: (endpointId) => slugs.get(endpointId) ?? endpointId,
        }),
      );
    }),
  ];
}
