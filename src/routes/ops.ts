/** Unauthenticated operations routes: liveness, readiness, Prometheus metrics. */
import type { RouteDef } from '../http/server.js';
import type { Services } from './services.js';

export function opsRoutes(services: Services): RouteDef[] {
  return [
    {
      method: 'GET',
      pattern: '/healthz',
      family: 'ops',
      plainHttpAllowed: true,
      handle: ({ reply }) => reply.json(200, { status: 'ok' }),
    },
    {
      method: 'GET',
      pattern: '/readyz',
      family: 'ops',
      plainHttpAllowed: true,
      handle: ({ reply }) => {
        const checks = { store: services.isStoreOpen(), pool: services.pool.ready };
        const ready = checks.store && checks.pool;
        reply.json(ready ? 200 : 503, { status: ready ? 'ready' : 'not_ready', checks });
      },
    },
    {
      method: 'GET',
      pattern: '/metrics',
      family: 'ops',
      plainHttpAllowed: true,
      handle: async ({ reply }) => {
        const text = await services.metrics.registry.metrics();
        reply.send(200, text, services.metrics.registry.contentType);
      },
    },
  ];
}
