/**
 * `POST /dashboard/projects/{project}/playground/turn` (docs/decisions.md "Dashboard playground"): one turn
 * of the page's conversation, run by the API's own use cases in src/app, never a copy of them: the key step
 * (authentication, then `admitKey`: the project's request and token limiters), the endpoint or the router
 * (`endpointAccess` / `routerWorkspaceOf` + `routeChatTurn`: workspace rules, decision row), the budget
 * (`admitChat`), and `serveChatTurn` (validation, harness, the upstream turn, the usage row), with the
 * surface default of the service's own chat: the harness on (SPEC Passthrough 2). The caller they see
 * (app/detached-caller.ts) carries the chat body and headers an API client would have sent, under the
 * signed-in user's identity (playground-identity.ts); the answer streams to the page (turn-relay.ts).
 *
 * Refusals before the stream are the API's envelopes with the API's status (429 with its Retry-After and
 * RateLimit headers, 403 workspace_not_allowed ...); another project's playground is 404 like its page.
 */
import { authenticateKey, type AuthenticatedKey } from '../../core/auth/authenticate.js';
import { FEATURE_HEADERS, resolveHarness, type HarnessFeature } from '../../core/chat/header-flags.js';
import { limitClassOf } from '../../core/limits/rate-limiter.js';
import { GatewayError } from '../../errors.js';
import { newRequestId } from '../../request-id.js';
import type { RouteContext } from '../../http/server.js';
import { admitChat, chatBodyFrom } from '../../app/chat/chat-completion.js';
import { serveChatTurn, type ChatBody } from '../../app/chat/chat-turn.js';
import { DetachedCaller } from '../../app/detached-caller.js';
import { endpointAccess, type WorkspaceChoice } from '../../app/endpoint-access.js';
import { admitKey } from '../../app/key-admission.js';
import { RecordedAnswer } from '../../app/recorded-answer.js';
import { routerWorkspaceOf, type RouterChatServices } from '../../app/chat/router-chat-services.js';
import { routeChatTurn } from '../../app/chat/route-chat-turn.js';
import type { DecisionLog, DecisionRecord } from '../../store/decision-log.js';
import type { PageDef, PageParams } from '../pages/page-kit.js';
import { PROJECTS_PATH } from '../pages/paths.js';
import type { DashboardPrincipal } from '../principal.js';
import { createTurnCredentials, playgroundKey, type TurnCredentials } from './playground-identity.js';
import { createTurnRelay, type TurnRelay } from './turn-relay.js';
import { chatBodyOf, chatHeadersOf, parsePlaygroundTurn, type PlaygroundTurn } from './turn-request.js';

/** The limiter classes of the API routes a playground turn stands for (direct and routed chat). */
const DIRECT_CLASS = limitClassOf('chat', 'POST', '/:project/:endpoint/v1/chat/completions');
const ROUTER_CLASS = limitClassOf('router', 'POST', '/:project/_semantic/router/v1/chat/completions');
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
    const { bearer, release } = credentials.issue(playgroundKey(principal, projectId, services.now()));
    // The turn's caller: the chat body and headers an API client would have sent, under the user's stand-in
    // key; decision rows say where it came from and whose address it was.
    const headers = { ...chatHeadersOf(turn), authorization: `Bearer ${bearer}`, 'user-agent': ctx.req.header('user-agent') ?? 'switchboard-playground' };
    const inner = { req: new DetachedCaller({ requestId: newRequestId('chatcmpl-'), headers, surface: 'dashboard', clientIp: ctx.req.clientIp }), reply: new RecordedAnswer() };
    const requestId = inner.req.requestId;
    // The page closing its request stops the turn, upstream call included, as an API client's abort does.
    ctx.req.onAbort(() => inner.req.abort());
    let ranOn: { slug: string; model: string } | null = null;
    decisions.set(requestId, null);
    const relay = createTurnRelay(
      ctx.reply,
      {
        requestId,
        target: turn.target.kind,
        workspace: turn.workspace ?? null,
        enabled: enabledFeatures(inner.req.headers),
        headers: () => inner.reply.headers,
        decision: () => decisions.get(requestId) ?? null,
        endpoint: () => ranOn,
      },
      () => !inner.req.aborted,
    );
    try {
      await runTurn(inner, projectId, turn, relay, (e) => (ranOn = { slug: e.slug, model: e.model.id }));
    } catch (err) {
      if (relay.started) return relay.fail(err);
      relay.forwardHeaders();
      throw err;
    } finally {
      release();
      decisions.delete(requestId);
      // The access log and endpoint metrics see the turn (project, endpoint, user, tokens, latencies); the
      // client address is the page's already.
      Object.assign(ctx.req.log, inner.req.log);
    }
  }

  /** The API's key step for the stand-in key: authentication, then the limiters of the route the turn stands for. */
  function admit(inner: Inner, projectId: string, routed: boolean): AuthenticatedKey | Promise<AuthenticatedKey> {
    const now = services.now();
    const check = { authorization: inner.req.header('authorization'), clientIp: () => inner.req.clientIp, projectRef: projectId, scope: 'inference' as const, now };
    const auth = authenticateKey(check, services.catalog, services.catalog.project);
    inner.req.log.project = auth.project.id;
    inner.req.log.keyId = auth.key.id;
    return admitKey(services, inner.reply, auth, routed ? ROUTER_CLASS : DIRECT_CLASS, now);
  }

  async function runTurn(inner: Inner, projectId: string, turn: PlaygroundTurn, reply: TurnRelay, ranOn: (e: { slug: string; model: { id: string } }) => void): Promise<void> {
    const auth = await admit(inner, projectId, turn.target.kind !== 'endpoint');
    const choice = workspaceChoice(inner.req);
    if (turn.target.kind === 'endpoint') {
      const access = endpointAccess(services, auth, turn.target.endpoint, choice, inner.req.log);
      admitChat(services, inner, auth, access);
      const body = bodyOf(turn, access.endpoint.model.id);
      ranOn(access.endpoint);
      await serveChatTurn(services, { ctx: inner, auth, endpoint: access.endpoint, workspaceId: access.workspaceId, ...body, route: 'chat', reply, surfaceDefault: true });
      return;
    }
    const workspace = routerWorkspaceOf(services, auth, choice);
    const body = bodyOf(turn, ROUTED_MODEL);
    const endpoint = await routeChatTurn(services, inner, auth, workspace, body.chat);
    ranOn(endpoint);
    await serveChatTurn(services, { ctx: inner, auth, endpoint, workspaceId: workspace.workspaceId, ...body, route: 'router', reply, surfaceDefault: true });
  }
}

/** The turn's request and where its headers are kept (the relay forwards them to the page). */
interface Inner {
  readonly req: DetachedCaller;
  readonly reply: RecordedAnswer;
}

/** The workspace the turn names (turn-request.ts chatHeadersOf puts it in X-Workspace-Id, as a client would). */
function workspaceChoice(req: DetachedCaller): WorkspaceChoice {
  const named = req.header('x-workspace-id');
  return named === undefined ? { named: null, namedBy: '' } : { named: named.trim(), namedBy: 'X-Workspace-Id' };
}

/** The chat body an API client would have sent, validated as the API validates one. */
function bodyOf(turn: PlaygroundTurn, model: string): ChatBody {
  const raw = Buffer.from(JSON.stringify(chatBodyOf(turn, model)));
  return chatBodyFrom(raw, JSON.parse(raw.toString('utf8')));
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
