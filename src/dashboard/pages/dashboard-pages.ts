/**
 * Every operator page (docs/decisions.md "Dashboard pages"), before the session guard: main.ts wraps each
 * with dashboard/auth/dashboard-route.ts. Plus the stylesheet, which needs no session (it is the same for
 * everyone and carries nothing of anyone's).
 */
import type { Config, EndpointConfig } from '../../config.js';
import type { RouteDef } from '../../http/server.js';
import { endpointsPages } from './endpoints-routes.js';
import { requestsPages } from './requests-routes.js';
import { DASHBOARD_CSS } from '../assets/stylesheet.js';
import { approvalsPages } from './approvals-routes.js';
import { keysPages } from './keys-routes.js';
import { membersPages } from './members-routes.js';
import type { PageDef, PageDeps } from './page-kit.js';
import { STYLESHEET_PATH } from './paths.js';
import { projectsPages } from './projects-routes.js';
import { routerPages } from './router-routes.js';
import { usagePages } from './usage-routes.js';
import { webhooksPages } from './webhooks-routes.js';

export function dashboardPages(deps: PageDeps): PageDef[] {
  return [
    ...projectsPages(deps),
    ...keysPages(deps),
    ...routerPages(deps),
    ...webhooksPages(deps),
    ...usagePages(deps),
    ...requestsPages(deps),
    ...endpointsPages(deps),
    ...approvalsPages(deps),
    ...membersPages(deps),
  ];
}

/** The config's prices by endpoint id, for the Endpoints page (as the charging layer reads them at start). */
export function endpointPrices(config: Config): (endpointId: string) => EndpointConfig['prices'] {
  const prices = new Map(config.projects.flatMap((p) => p.endpoints.map((e) => [e.id, e.prices] as const)));
  return (endpointId) => prices.get(endpointId);
}

export function dashboardAssetRoutes(): RouteDef[] {
  return [
    {
      method: 'GET',
      pattern: STYLESHEET_PATH,
      family: 'dashboard',
      auth: { kind: 'public' },
      handle(ctx) {
        ctx.reply.setHeader('Cache-Control', 'public, max-age=300');
        ctx.reply.setHeader('X-Content-Type-Options', 'nosniff');
        ctx.reply.send(200, DASHBOARD_CSS, 'text/css; charset=utf-8');
      },
    },
  ];
}
