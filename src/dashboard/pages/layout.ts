/**
 * The frame of every operator page: the dashboard's page shell (dashboard/html.ts: the per-session CSRF
 * token in `<meta name="csrf-token">`, SPEC Authentication 16, and the signed-in nav), the project's section tabs, and
 * the notice or form error of the last action. Only our own stylesheet is linked: nothing is loaded from
 * outside the machine, and nothing inline (the CSP forbids it).
 */
import { pageShell } from '../html.js';
import type { DashboardPrincipal, ProjectRole } from '../principal.js';
import { html, type Markup, type SafeHtml } from './markup.js';
import { PROJECTS_PATH, projectPath, SECTION_TITLES, SECTIONS, type Section } from './paths.js';

/** What the last action did, shown above the page: a success, or a refusal in words (never a JSON envelope). */
export interface Notice {
  readonly kind: 'ok' | 'error';
  readonly text: string;
  /** The field a refusal names (`allowed_ips[1]`), when it names one. */
  readonly field?: string | null;
}

export function documentOf(principal: DashboardPrincipal, title: string, body: Markup): string {
  return pageShell({ title, csrfToken: principal.csrfToken, signedInAs: principal.name || principal.email }, body);
}

export function noticeBox(notice: Notice | null | undefined): SafeHtml {
  if (!notice) return html``;
  const field = notice.field ? html` <span class="field">(${notice.field})</span>` : '';
  return html`<p class="notice ${notice.kind}" role="${notice.kind === 'error' ? 'alert' : 'status'}">${notice.text}${field}</p>`;
}

export interface ProjectFrame {
  readonly principal: DashboardPrincipal;
  readonly project: { readonly id: string; readonly name: string };
  readonly role: ProjectRole;
  readonly section: Section;
  readonly notice?: Notice | null | undefined;
}

/** A project page: tabs for every section, the role the user holds, then the section's body. */
export function projectDocument(frame: ProjectFrame, body: Markup, subtitle?: string): string {
  const { project, section, role } = frame;
  const tabs = SECTIONS.map(
    (s) => html`<a href="${projectPath(project.id, s)}"${s === section ? html` class="current" aria-current="page"` : ''}>${SECTION_TITLES[s]}</a>`,
  );
  const heading = subtitle ?? SECTION_TITLES[section];
  return documentOf(
    frame.principal,
    `${heading} · ${project.name}`,
    html`<nav class="crumbs"><a href="${PROJECTS_PATH}">Projects</a> / <span>${project.name}</span> <code>${project.id}</code> <span class="role">${role}</span></nav>
<nav class="tabs">${tabs}</nav>
<h1>${heading}</h1>
${noticeBox(frame.notice)}
${body}`,
  );
}

/** The hidden field every form carries: the CSRF guard accepts it in place of the X-CSRF-Token header. */
export function csrfField(principal: DashboardPrincipal): SafeHtml {
  return html`<input type="hidden" name="csrf_token" value="${principal.csrfToken}">`;
}

/** UTC, to the minute: `2026-11-23 20:15 UTC`. */
export function when(ms: number | null): string {
  if (ms === null) return '—';
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
