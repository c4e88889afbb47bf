/**
 * `POST /dashboard/projects/{project}/playground/turn` (docs/decisions.md "Dashboard playground"): one turn
 * of the page's conversation, run by the API's own use cases, never a copy of them: the key step
 * (`requireKey`: authentication, the project's request and token limiters), the endpoint or the router
 * (`requireEndpoint` / `routerWorkspace` + `routeChatTurn`: workspace rules, decision row), the budget, and
 * `serveChatTurn` (validation, harness, the upstream turn, the usage row), with the surface default of the
 * service's own chat: the harness on (SPEC Passthrough 2). The request they see is a synthetic one
 * (http/synthetic-request.ts) carrying the chat body and headers an API client would have sent, under the
 * signed-in user's identity (playground-identity.ts); the answer streams to the page (turn-relay.ts).
 *
 * Refusals before the stream are the API's envelopes with the API's status (429 with its Retry-After and
 * RateLimit headers, 403 workspace_not_allowed ...); another project's playground is 404 like its page.
 */
import { FEATURE_HEADERS, resolveHarness, type HarnessFeature } from '../../core/chat/header-flags.js';
import { GatewayError } from '../../errors.js';
import { createSyntheticRequest } from '../../http/synthetic-request.js';
import type { RouteContext, RouteDef } from '../../http/server.js';
import { assertServesChat } from '../../routes/chat-completions.js';
import { serveChatTurn } from '../../app/chat/chat-turn.js';
import { parseChatBody } from '../../routes/chat-body.js';
import { requireBudget } from '../../app/endpoint-access.js';
import { requireEndpoint, requireKey } from '../../routes/guard.js';
import type { RouterChatServices } from '../../app/chat/router-chat-services.js';
import { routeChatTurn } from '../../app/chat/route-chat-turn.js';
import { routerWorkspace } from '../../routes/semantic-router-chat.js';
import type { DecisionLog, DecisionRecord } from '../../store/decision-log.js';
import type { PageDef, PageParams } from '../pages/page-kit.js';
import { PROJECTS_PATH } from '../pages/paths.js';
import type { DashboardPrincipal } from '../principal.js';
import { createTurnCredentials, playgroundKey, type TurnCredentials } from './playground-identity.js';
import { createTurnRelay, type TurnRelay } from './turn-relay.js';
import { chatBodyOf, chatHeadersOf, parsePlaygroundTurn, type PlaygroundTurn } from './turn-request.js';

/** The API routes whose steps a playground turn runs: their family and pattern pick the limiter class. */
const TURN_AUTH = { kind: 'in-handler', credential: 'API key with the inference scope', why: 'runTurn calls requireKey on the synthetic request' } as const;
const DIRECT_ROUTE: RouteDef = { method: 'POST', pattern: '/:project/:endpoint/v1/chat/completions', family: 'chat', idPrefix: 'chatcmpl-', auth: TURN_AUTH, handle: () => undefined };
const ROUTER_ROUTE: RouteDef = { method: 'POST', pattern: '/:project/_semantic/router/v1/chat/completions', family: 'router', idPrefix: 'chatcmpl-', auth: TURN_AUTH, handle: () => undefined };
/** The `model` a routed turn sends: the router ignores it and the answer's chunks echo it back. */
export const ROUTED_MODEL = 'playground-router';

export const playgroundTurnPath = (projectId: string): string => `${PROJECTS_PATH}/${encodeURIComponent(projectId)}/playground/turn`;

export interface PlaygroundTurnDeps {
  readonly services: RouterChatServices;
}

/** The router services of the playground: the same router, with the decision rows of its turns visible to it. */
function watchingDecisions(services: RouterChatServices, credentials: TurnCredentials, seen: Map<string, DecisionRecord | null>): RouterChatServices {
  const inner = services.decisionLog;
  const decisionLog: DecisionLog = {
    record(row) {
      inner.record(row);
      if (seen.has(row.requestId)) seen.set(row.requestId, row);
    },
    flush: () => inner.flush(),
    prune: (before) => inner.prune(before),
    close: () => inner.close(),
  };
  return { ...services, catalog: credentials.catalog, decisionLog };
}

export function playgroundTurnRoute(deps: PlaygroundTurnDeps): PageDef {
  const credentials = createTurnCredentials(deps.services.catalog);
  const decisions = new Map<string, DecisionRecord | null>();
  const services = watchingDecisions(deps.services, credentials, decisions);
  return {
    method: 'POST',
    pattern: `${PROJECTS_PATH}/:project/playground/turn`,
    handle: (ctx, principal, params) => serveTurn(ctx, principal, params),
  };

  async function serveTurn(ctx: RouteContext, principal: DashboardPrincipal, params: PageParams): Promise<void> {
    const projectId = params.project ?? '';
    const project = principal.roleIn(projectId) === null ? null : services.catalog.project(projectId);
    if (project === null || project.id !== projectId) {
      await ctx.req.body();
      // Members, admins and owners alike may use it: it is inference, not configuration. No role: 404.
      throw new GatewayError('not_found', { message: 'There is no such project in your projects.' });
    }
    const turn = parsePlaygroundTurn(await ctx.req.json());
    const endpointSlug = turn.target.kind === 'endpoint' ? turn.target.endpoint : null;
    const model = endpointSlug === null ? ROUTED_MODEL : (services.catalog.endpoint(projectId, endpointSlug)?.model.id ?? endpointSlug);
    const { bearer, release } = credentials.issue(playgroundKey(principal, projectId, services.now()));
    const route = endpointSlug === null ? ROUTER_ROUTE : DIRECT_ROUTE;
    const headers = { ...chatHeadersOf(turn), authorization: `Bearer ${bearer}`, 'user-agent': ctx.req.header('user-agent') ?? 'switchboard-playground' };
    const synthetic = createSyntheticRequest({ method: 'POST', path: `/${projectId}/playground`, headers, body: Buffer.from(JSON.stringify(chatBodyOf(turn, model))), idPrefix: 'chatcmpl-' });
    synthetic.req.params = endpointSlug === null ? { project: projectId } : { project: projectId, endpoint: endpointSlug };
    // Decision rows say where the turn came from and whose address it was (not the stand-in's loopback).
    synthetic.req.surface = 'dashboard';
    synthetic.req.actFor(ctx.req.clientIp);
    const requestId = synthetic.req.requestId;
    // The page closing its request stops the turn, upstream call included, as an API client's abort does.
    ctx.req.onAbort(() => synthetic.abort());
    let ranOn: { slug: string; model: string } | null = null;
    decisions.set(requestId, null);
    const relay = createTurnRelay(
      ctx.reply,
      {
        requestId,
        target: turn.target.kind,
        workspace: turn.workspace ?? null,
        enabled: enabledFeatures(synthetic.req.headers),
        headers: () => synthetic.reply.pendingHeaders.filter(([name]) => name !== 'X-Request-ID'),
        decision: () => decisions.get(requestId) ?? null,
        endpoint: () => ranOn,
      },
      () => !synthetic.req.aborted,
    );
    const inner: RouteContext = { req: synthetic.req, reply: synthetic.reply, route, draining: ctx.draining };
    try {
      await runTurn(inner, turn, relay, (e) => (ranOn = { slug: e.slug, model: e.model.id }));
    } catch (err) {
      if (relay.started) return relay.fail(err);
      relay.forwardHeaders();
      throw err;
    } finally {
      release();
      decisions.delete(requestId);
      // The access log and endpoint metrics see the turn (project, endpoint, user, tokens, latencies); the
      // client address is the page's already (actFor above).
      const { clientIp: _same, ...turnLog } = synthetic.req.log;
      Object.assign(ctx.req.log, turnLog);
    }
  }

  async function runTurn(inner: RouteContext, turn: PlaygroundTurn, reply: TurnRelay, ranOn: (e: { slug: string; model: { id: string } }) => void): Promise<void> {
    // Called here: the playground route itself is a session route; its turn runs the key step on the
    // synthetic request that carries the user's stand-in key.
    const auth = await requireKey(inner, services, 'inference');
    if (turn.target.kind === 'endpoint') {
      const access = requireEndpoint(inner.req, services, auth);
      assertServesChat(access.endpoint);
      requireBudget(inner, services, auth, access);
      const body = await parseChatBody(inner.req);
      ranOn(access.endpoint);
      await serveChatTurn(services, { ctx: inner, auth, endpoint: access.endpoint, workspaceId: access.workspaceId, ...body, route: 'chat', reply, surfaceDefault: true });
      return;
    }
    const workspace = routerWorkspace(inner, services, auth);
    const body = await parseChatBody(inner.req);
    const endpoint = await routeChatTurn(services, inner, auth, workspace, body.chat);
    ranOn(endpoint);
    await serveChatTurn(services, { ctx: inner, auth, endpoint, workspaceId: workspace.workspaceId, ...body, route: 'router', reply, surfaceDefault: true });
  }
}

/**
 * The harness features on for this turn under the surface default (tool top-k only when asked for), named
 * as `x-service-augmented` names the ones that acted: their header without `x-service-(augment-)`.
 */
function enabledFeatures(headers: Readonly<Record<string, string>>): string[] {
  const flags = resolveHarness(headers, true);
  return (Object.keys(FEATURE_HEADERS) as HarnessFeature[]).filter((f) => flags[f]).map(featureLabel);
}

export const featureLabel = (feature: HarnessFeature): string => FEATURE_HEADERS[feature].replace(/^x-service-(augment-)?/, '');
