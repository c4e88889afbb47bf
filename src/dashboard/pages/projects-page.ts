/**
 * The projects overview (every project the user has a role in) and a project's overview page (its
 * endpoints, workspaces the user reads, and counts that link to the sections).
 */
import type { EndpointRecord, WorkspaceRecord } from '../../core/records.js';
import type { DashboardPrincipal, ProjectRole } from '../principal.js';
import { documentOf, projectDocument, type ProjectFrame } from './layout.js';
import { html } from './markup.js';
import { projectPath } from './paths.js';

export interface ProjectSummary {
  readonly id: string;
  readonly name: string;
  readonly role: ProjectRole;
  readonly endpoints: number;
}

export function renderProjectsPage(principal: DashboardPrincipal, projects: readonly ProjectSummary[]): string {
  return documentOf(
    principal,
    'Projects',
    html`<h1>Projects</h1>
${
  projects.length === 0
    ? html`<p class="muted">You have no project role yet; an owner can add you.</p>`
    : html`<table class="projects"><thead><tr><th>Project</th><th>Your role</th><th>Endpoints</th><th></th></tr></thead><tbody>
${projects.map(
  (p) => html`<tr><td><a href="${projectPath(p.id)}">${p.name}</a><br><code>${p.id}</code></td><td>${p.role}</td><td>${p.endpoints}</td>
<td class="links"><a href="${projectPath(p.id, 'keys')}">API keys</a> <a href="${projectPath(p.id, 'router')}">Router</a> <a href="${projectPath(p.id, 'usage')}">Usage</a></td></tr>`,
)}</tbody></table>`
}`,
  );
}

export interface ProjectOverviewData {
  readonly endpoints: readonly EndpointRecord[];
  readonly workspaces: readonly WorkspaceRecord[];
  readonly activeKeys: number;
  readonly pendingApprovals: number;
  readonly requestsToday: number;
}

export function renderProjectOverview(frame: ProjectFrame, d: ProjectOverviewData): string {
  const id = frame.project.id;
  return projectDocument(
    frame,
    html`<dl class="counts">
<div><dt><a href="${projectPath(id, 'keys')}">Active API keys</a></dt><dd>${d.activeKeys}</dd></div>
<div><dt><a href="${projectPath(id, 'approvals')}">Pending approvals</a></dt><dd>${d.pendingApprovals}</dd></div>
<div><dt><a href="${projectPath(id, 'usage')}">Requests today (UTC)</a></dt><dd>${d.requestsToday}</dd></div>
</dl>
<section class="card"><h2>Endpoints</h2><table><thead><tr><th>Slug</th><th>Kind</th><th>Model</th><th>Status</th><th>Id</th></tr></thead><tbody>
${d.endpoints.map((e) => html`<tr><td>${e.slug}</td><td>${e.kind}</td><td>${e.model.id}</td><td><span class="status ${e.status}">${e.status}</span></td><td><code>${e.id}</code></td></tr>`)}
</tbody></table></section>
<section class="card"><h2>Workspaces you can read</h2><ul>${d.workspaces.map((w) => html`<li>${w.name} <code>${w.id}</code></li>`)}</ul></section>`,
  );
}
