/**
 * A turn on a semantic router route, before it is served: the router picks the endpoint, the budget is
 * checked, the routed headers are set and the decision row is written (SPEC "Semantic router behaviour").
 * The turn itself is then served by chat-turn.ts, the same code as a direct request.
 */
import type { AuthenticatedKey } from '../../core/auth/authenticate.js';
import { GatewayError } from '../../errors.js';
import type { EndpointRecord } from '../../core/records.js';
import { requestedSlo } from '../../core/routing/latency-window.js';
import { queryPreview } from '../../core/routing/query.js';
import { clientModeOf, decisionRecord } from '../../router/decision-row.js';
import type { ChatRequest } from '../../schemas/chat-request.js';
import { requireBudget } from '../endpoint-access.js';
import type { RoutedExchange } from '../turn-io.js';
import type { RouterChatServices, RouterWorkspace } from './router-chat-services.js';
import type { Routed, RouteRequest } from '../../router/semantic-router.js';
import type { RoutingSpan } from '../../tracing/trace-port.js';

/**
 * The router's choice for one parsed turn: route, budget, the routed headers and the decision row. Shared
 * with the Responses API's semantic route (routes/responses.ts), which routes the chat turn it translates to.
 */
export async function routeChatTurn(services: RouterChatServices, ctx: RoutedExchange, auth: AuthenticatedKey, workspace: RouterWorkspace, chat: ChatRequest): Promise<EndpointRecord> {
  const { req, reply } = ctx;
  const { workspaceId, namedBy } = workspace;
  const started = performance.now();
  const { endpoint, decision } = await traced(services, ctx.req, workspaceId, {
    projectId: auth.project.id,
    workspaceId,
    keyEndpointId: auth.key.endpointId,
    chat,
    // SPEC: the affinity key, on router routes only (direct routes never read it).
    conversationId: req.header('x-conversation-id'),
    onAbort: (listener) => req.onAbort(listener),
    requestId: req.requestId,
    slo: requestedSlo(req.header('x-slo-ttft-ms'), req.header('x-slo-tpot-ms')),
  });
  const routeTimeMs = performance.now() - started;
  req.log.endpoint = endpoint.slug;
  // A budget refusal is not a dispatched turn: no routed headers, no decision row.
  requireBudget(ctx, services, auth, { endpoint, workspaceId });
  reply.setHeader('X-Service-Routed-Model', endpoint.model.id);
  reply.setHeader('X-Service-Routed-Endpoint', endpoint.slug);
  services.decisionLog.record(
    decisionRecord(
      {
        requestId: req.requestId,
        projectId: auth.project.id,
        workspaceId,
        createdAt: services.now(),
        preview: queryPreview(chat.messages),
        routerId: services.routerId,
        clientMode: clientModeOf(req.surface, namedBy),
        userAgent: req.header('user-agent') ?? null,
        clientIp: req.clientIp,
        routeTimeMs,
      },
      decision,
      endpoint,
    ),
  );
  return endpoint;
}

/**
 * The router's call, as a child span of the request's trace when tracing is on (its choice, or its
 * refusal). Not async itself: with tracing off the router's own promise is returned, nothing wrapped.
 */
function traced(services: RouterChatServices, req: RoutedExchange['req'], workspaceId: string | null, r: RouteRequest): Promise<Routed> {
  const span = req.trace ? req.trace.routing() : null;
  return span === null ? services.router.route(r) : routeInSpan(services, span, workspaceId, r);
}

async function routeInSpan(services: RouterChatServices, span: RoutingSpan, workspaceId: string | null, r: RouteRequest): Promise<Routed> {
  try {
    const routed = await services.router.route(r);
    span.chose(routed.endpoint.slug, routed.endpoint.model.id, routed.decision.reason, workspaceId);
    span.end();
    return routed;
  } catch (err) {
    span.end(err instanceof GatewayError ? err.code : 'internal_error');
    throw err;
  }
}
