/**
 * GET and POST /{project}/v1/slos (SPEC names the routes, shapes not shown; issue 14): per-endpoint
 * latency objectives. The SPEC request headers X-SLO-TTFT-Ms / X-SLO-TPOT-Ms override them per turn; the
 * semantic router prefers endpoints whose measured latency meets the turn's objective
 * (router/slo-tracker.ts), and the router health route reports attainment. Control-plane rate limit
 * (family `slos`), inference scope like the rest of the `/v1` surface a client uses.
 *
 *   POST {endpoint: slug or id, ttft_ms?, tpot_ms?} -> 201 (new) or 200 (replaced) slo object
 *   GET                                             -> {object: "list", data: [slo object]}
 *
 * An slo object: {object: "slo", endpoint_id, endpoint_slug, ttft_ms, tpot_ms, measured: {ttft_ms,
 * tpot_ms, samples}, attainment, created_at, updated_at} (times in Unix seconds).
 */
import { authorizeEndpoint, type AuthenticatedKey } from '../core/auth/authenticate.js';
import type { EndpointRecord } from '../core/records.js';
import { GatewayError } from '../errors.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import type { SloTracker } from '../router/slo-tracker.js';
import { parseSloPut } from '../schemas/models-api.js';
import type { EndpointSlo } from '../core/store/router-store.js';
import { keyed, MANAGEMENT_BODY_LIMIT, wrongEndpointKind } from './guard.js';
import type { Services } from '../app/services.js';

export interface SlosServices extends Services {
  readonly slos: SloTracker;
}

export function slosRoutes(services: SlosServices): RouteDef[] {
  const { slos } = services;
  const view = (s: EndpointSlo, endpoint: EndpointRecord) => {
    const [report] = slos.report(s.projectId, [endpoint]);
    return {
      object: 'slo' as const,
      endpoint_id: s.endpointId,
      endpoint_slug: endpoint.slug,
      ttft_ms: s.ttftMs,
      tpot_ms: s.tpotMs,
      measured: report?.measured ?? null,
      attainment: report?.attainment ?? 'no_data',
      created_at: Math.floor(s.createdAt / 1000),
      updated_at: Math.floor(s.updatedAt / 1000),
    };
  };

  const list = (ctx: RouteContext, auth: AuthenticatedKey): void => {
    const endpoints = new Map(services.catalog.endpoints(auth.project.id).map((e) => [e.id, e]));
    const data = slos.stored
      .list(auth.project.id)
      .flatMap((s) => {
        const e = endpoints.get(s.endpointId);
        // An endpoint removed from the config keeps its row (it may come back) but is not listed.
        return e && (auth.key.endpointId === null || auth.key.endpointId === e.id) ? [view(s, e)] : [];
      });
    ctx.reply.json(200, { object: 'list', data });
  };

  const put = async (ctx: RouteContext, auth: AuthenticatedKey): Promise<void> => {
    const projectId = auth.project.id;
    const body = parseSloPut(await ctx.req.json());
    const endpoint = services.catalog.endpoints(projectId).find((e) => e.slug === body.endpoint || e.id === body.endpoint);
    if (!endpoint) throw new GatewayError('endpoint_not_found', { param: 'endpoint', message: `Project ${projectId} has no endpoint ${JSON.stringify(body.endpoint)}.` });
    authorizeEndpoint(auth.key, endpoint);
    if (endpoint.kind !== 'chat') {
      throw wrongEndpointKind(endpoint, 'latency objectives apply to chat endpoints (time to first token, time per output token)', 'endpoint');
    }
    const ttftMs = body.ttft_ms ?? null;
    const tpotMs = body.tpot_ms ?? null;
    if (ttftMs === null && tpotMs === null) {
      throw new GatewayError('invalid_request', { param: 'ttft_ms', message: 'Set ttft_ms, tpot_ms or both: an objective of neither would have no effect.' });
    }
    const existed = slos.stored.list(projectId).some((s) => s.endpointId === endpoint.id);
    const stored = await slos.stored.put(projectId, endpoint.id, { ttftMs, tpotMs }, services.now());
    ctx.reply.json(existed ? 200 : 201, view(stored, endpoint));
  };

  return [
    keyed(services, 'inference', { method: 'GET', pattern: '/:project/v1/slos', family: 'slos', handle: list }),
    keyed(services, 'inference', { method: 'POST', pattern: '/:project/v1/slos', family: 'slos', bodyLimit: MANAGEMENT_BODY_LIMIT, handle: put }),
  ];
}
