/** The Endpoints and models page's handler: the catalog, the config's prices, the pools' health, the aliases. */
import { renderEndpointsPage } from './endpoints-page.js';
import { projectRoute, type PageDef, type PageDeps } from './page-kit.js';

export function endpointsPages(deps: PageDeps): PageDef[] {
  return [
    projectRoute(deps, { method: 'GET', path: '/endpoints', write: false }, (page) => {
      const id = page.project.id;
      const pools = new Map(deps.upstreamReport(id).map((p) => [p.endpoint_id, p]));
      page.send(200, renderEndpointsPage(page.frame('endpoints'), { endpoints: deps.catalog.endpoints(id), pools, pricesOf: deps.pricesOf, aliases: deps.aliases.list(id) }));
    }),
  ];
}
