/**
 * What every operator page handler shares: the services it reads and writes through (the same use cases
 * as the management API), its definition (`handle(ctx, principal, params)`, wrapped by the session guard
 * in dashboard/auth/dashboard-route.ts), and the project gate: a project the user has no role in is 404,
 * exactly as one that does not exist; a write by a member is 403 with nothing changed. Refusals of a write
 * come back as the page with the reason in words, with the status the API would have answered.
 */
import type { ApprovalDecisions } from '../../app/approval-decisions.js';
import type { ApprovalViews } from '../../app/approval-views.js';
import type { ProjectMembers } from '../auth/project-members.js';
import type { KeyManagement } from '../../app/key-management.js';
import type { RouterManagement } from '../../app/router-management.js';
import type { ProjectRecord, WorkspaceRecord } from '../../core/records.js';
import type { WebhookManager } from '../../core/webhooks/webhook-manager.js';
import { GatewayError } from '../../errors.js';
import type { RouteContext, RouteDef } from '../../http/server.js';
import type { Catalog } from '../../store/catalog.js';
import type { EndpointConfig } from '../../config.js';
import type { ModelAliasReader } from '../../core/store/router-store.js';
import type { RequestRowsSource, UsageTotalsSource } from '../../core/store/usage-store.js';
import type { PoolReport } from '../../upstream/upstream-pool.js';
import { canWrite, type DashboardPrincipal, type ProjectRole } from '../principal.js';
import { documentOf, type Notice, type ProjectFrame } from './layout.js';
import { html } from './markup.js';
import { PROJECTS_PATH, type Section } from './paths.js';

export interface PageDeps {
  readonly catalog: Pick<Catalog, 'project' | 'workspaces' | 'endpoints'>;
  readonly now: () => number;
  readonly keys: KeyManagement;
  readonly router: RouterManagement;
  readonly webhooks: WebhookManager;
  /** The usage port (SQLite through its reader thread, or PostgreSQL): totals and the ledger's rows. */
  readonly usage: UsageTotalsSource & RequestRowsSource;
  /** A request's routing decision, its excerpt left out (router/decision-reads.ts). */
  readonly decisions: { forRequest(projectId: string, requestId: string, from: number, to: number): Promise<Record<string, unknown> | null> };
  /** Each endpoint's pool of servers and their health, as /readyz reports them. */
  readonly upstreamReport: (projectId: string) => readonly PoolReport[];
  /** An endpoint's configured prices (undefined: none). */
  readonly pricesOf: (endpointId: string) => EndpointConfig['prices'];
  readonly aliases: Pick<ModelAliasReader, 'list'>;
  /** Absent when the execution surface is not wired: the approvals page says so. */
  readonly approvals?: ApprovalDecisions;
  /** The names and arguments around each approval (app/approval-views.ts). */
  readonly approvalViews?: ApprovalViews;
  /** The members page's use cases; absent: the page says members are managed with `switchboard users`. */
  readonly members?: ProjectMembers;
}

export type PageParams = Readonly<Record<string, string>>;

/** A page before the session guard: dashboard-route.ts makes it a RouteDef. */
export interface PageDef {
  readonly method: RouteDef['method'];
  readonly pattern: string;
  handle(ctx: RouteContext, principal: DashboardPrincipal, params: PageParams): Promise<void> | void;
}

export function sendHtml(ctx: RouteContext, status: number, page: string): void {
  // Pages may carry a value shown once (a new key, a webhook secret): never stored by a cache.
  ctx.reply.setHeader('Cache-Control', 'no-store');
  ctx.reply.send(status, page, 'text/html; charset=utf-8');
}

/** A form body (application/x-www-form-urlencoded), as the browser sends it. */
export async function readForm(ctx: RouteContext): Promise<URLSearchParams> {
  return new URLSearchParams((await ctx.req.body()).toString('utf8'));
}

function plainPage(ctx: RouteContext, principal: DashboardPrincipal, status: number, title: string, text: string): void {
  sendHtml(ctx, status, documentOf(principal, title, html`<h1>${title}</h1><p>${text}</p><p><a href="${PROJECTS_PATH}">Your projects</a></p>`));
}

/** The project a page belongs to, as the signed-in user sees it. */
export interface ProjectPage {
  readonly ctx: RouteContext;
  readonly principal: DashboardPrincipal;
  readonly params: PageParams;
  readonly project: ProjectRecord;
  readonly role: ProjectRole;
  readonly writable: boolean;
  /** The project's workspaces the user reads (SPEC Authentication 10: what a key of theirs may reach). */
  readonly workspaces: readonly WorkspaceRecord[];
  mayReadWorkspace(workspaceId: string | null): boolean;
  frame(section: Section, notice?: Notice | null): ProjectFrame;
  send(status: number, page: string): void;
}

/** A refusal of a write, as the page's notice; anything else is not ours to word and goes on up. */
export function refusalNotice(err: unknown): { status: number; notice: Notice } {
  if (err instanceof GatewayError && err.status < 500) return { status: err.status, notice: { kind: 'error', text: err.message, field: err.param } };
  throw err;
}

export interface ProjectRouteOptions {
  readonly method: RouteDef['method'];
  /** After `/dashboard/projects/:project`. */
  readonly path: string;
  /** Writes are refused to members before anything is read from the form; `'owner'`: to admins too. */
  readonly write: boolean | 'owner';
}

export function projectRoute(deps: PageDeps, opts: ProjectRouteOptions, run: (page: ProjectPage) => Promise<void> | void): PageDef {
  return {
    method: opts.method,
    pattern: `${PROJECTS_PATH}/:project${opts.path}`,
    async handle(ctx, principal, params) {
      const projectId = params.project ?? '';
      const role = principal.roleIn(projectId);
      const project = role === null ? null : deps.catalog.project(projectId);
      // Another project's page and a project that does not exist answer the same.
      if (role === null || project === null || project.id !== projectId) {
        if (opts.method !== 'GET') await ctx.req.body();
        plainPage(ctx, principal, 404, 'Not found', 'There is no such page in your projects.');
        return;
      }
      const writable = canWrite(role);
      if (opts.write === 'owner' && role !== 'owner') {
        await ctx.req.body();
        plainPage(ctx, principal, 403, 'Not allowed', `You are a ${role} of ${project.name}: only its owners may make this change. Nothing was changed.`);
        return;
      }
      if (opts.write && !writable) {
        await ctx.req.body();
        plainPage(ctx, principal, 403, 'Not allowed', `You are a ${role} of ${project.name}: members read; admins and owners make changes. Nothing was changed.`);
        return;
      }
      const readable = principal.workspacesIn(projectId);
      const all = [...deps.catalog.workspaces(projectId).values()];
      const workspaces = readable === 'all' ? all : all.filter((w) => readable.includes(w.id));
      await run({
        ctx,
        principal,
        params,
        project,
        role,
        writable,
        workspaces,
        mayReadWorkspace: (w) => readable === 'all' || (w !== null && readable.includes(w)),
        frame: (section, notice) => ({ principal, project: { id: project.id, name: project.name }, role, section, notice }),
        send: (status, page) => sendHtml(ctx, status, page),
      });
    },
  };
}

export function userPageRoute(pattern: string, run: (ctx: RouteContext, principal: DashboardPrincipal) => Promise<void> | void): PageDef {
  return { method: 'GET', pattern, handle: (ctx, principal) => run(ctx, principal) };
}
