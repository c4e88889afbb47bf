/**
 * The chat playground (issue 23; docs/decisions.md "Dashboard playground"): the page
 * `GET /dashboard/projects/{project}/playground`, its turn route `POST .../playground/turn`, both behind the
 * session guard (main.ts wraps them with dashboardAuth.dashboardRoute; the turn is CSRF-checked like every
 * dashboard write), and the page's script and stylesheet, which carry nothing of anyone's and need no session.
 *
 * The page alone widens the dashboard's CSP by `script-src 'self'; connect-src 'self'`: it runs our one
 * script, which talks to this server only. Every other page keeps running no script at all.
 */
import type { RouteContext, RouteDef } from '../../http/server.js';
import type { RouterChatServices } from '../../app/chat/router-chat-services.js';
import { PLAYGROUND_CSS, PLAYGROUND_JS } from '../assets/playground-script.js';
import { projectRoute, type PageDef, type PageDeps } from '../pages/page-kit.js';
import { PLAYGROUND_SCRIPT_PATH, PLAYGROUND_STYLESHEET_PATH, renderPlaygroundPage } from './playground-page.js';
import { playgroundTurnRoute } from './playground-turn.js';

export interface PlaygroundDeps {
  readonly pages: PageDeps;
  readonly services: RouterChatServices;
  /** The session guard (dashboardAuth.dashboardRoute). */
  readonly guard: (page: PageDef) => RouteDef;
  /** A turn carries the whole conversation: the inference body cap, not the dashboard forms' 64 KiB. */
  readonly maxBodyBytes: number;
}

const OWN_SCRIPT = "script-src 'self'; connect-src 'self'";

/** The guard's policy plus our own script and same-origin fetches, for this page only. */
function allowOwnScript(ctx: RouteContext): void {
  const csp = ctx.reply.pendingHeaders.find(([name]) => name === 'Content-Security-Policy')?.[1];
  if (csp !== undefined) ctx.reply.replaceHeader('Content-Security-Policy', `${csp}; ${OWN_SCRIPT}`);
}

/** The page and the turn route behind the session guard, and the two assets. */
export function playgroundRoutes(deps: PlaygroundDeps): RouteDef[] {
  const [page, turn] = playgroundPages(deps);
  return [deps.guard(page), { ...deps.guard(turn), bodyLimit: deps.maxBodyBytes }, ...playgroundAssetRoutes()];
}

function playgroundPages(deps: PlaygroundDeps): [PageDef, PageDef] {
  const page = projectRoute(deps.pages, { method: 'GET', path: '/playground', write: false }, (p) => {
    allowOwnScript(p.ctx);
    const readable = new Set(p.workspaces.map((w) => w.id));
    const endpoints = deps.pages.catalog
      .endpoints(p.project.id)
      .filter((e) => e.kind === 'chat' && e.status === 'active' && e.workspaceIds.some((w) => readable.has(w)));
    const defaultWorkspace = p.project.defaultWorkspaceId !== null && readable.has(p.project.defaultWorkspaceId) ? p.project.defaultWorkspaceId : null;
    p.send(200, renderPlaygroundPage(p.frame('playground'), { projectId: p.project.id, endpoints, workspaces: p.workspaces, defaultWorkspace }));
  });
  return [page, playgroundTurnRoute({ services: deps.services })];
}

function asset(pattern: string, body: string, contentType: string): RouteDef {
  return {
    method: 'GET',
    pattern,
    family: 'dashboard',
    auth: { kind: 'public' },
    handle(ctx) {
      ctx.reply.setHeader('Cache-Control', 'public, max-age=300');
      ctx.reply.setHeader('X-Content-Type-Options', 'nosniff');
      ctx.reply.send(200, body, contentType);
    },
  };
}

function playgroundAssetRoutes(): RouteDef[] {
  return [asset(PLAYGROUND_SCRIPT_PATH, PLAYGROUND_JS, 'text/javascript; charset=utf-8'), asset(PLAYGROUND_STYLESHEET_PATH, PLAYGROUND_CSS, 'text/css; charset=utf-8')];
}
