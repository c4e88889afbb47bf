/** GET /{project}/v1/endpoints: every non-deleted endpoint the key can reach, whatever its status. */
import type { EndpointRecord } from '../core/records.js';
import type { RouteDef } from '../http/server.js';
import { keyed, reachableEndpoints } from './guard.js';
import type { Services } from '../app/services.js';

export function endpointItem(e: EndpointRecord) {
  return {
    id: e.id,
    object: 'endpoint' as const,
    slug: e.slug,
    name: e.name,
    model_id: e.model.id,
    model_name: e.model.name ?? e.model.id,
    tier_id: e.tier,
    status: e.status,
    provisioning_state: null,
    provisioned_worker_id: null,
    created: Math.floor(e.createdAt / 1000),
  };
}

export function endpointsRoutes(services: Services): RouteDef[] {
  return [
    keyed(services, 'inference', {
      method: 'GET',
      pattern: '/:project/v1/endpoints',
      family: 'endpoints',
      handle: (ctx, auth) => {
        const { req, reply } = ctx;
        reply.json(200, { object: 'list', data: reachableEndpoints(req, services, auth).map(endpointItem) });
      },
    }),
  ];
}
