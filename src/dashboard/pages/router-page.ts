/**
 * The semantic router page (SPEC "Semantic router management"): availability, settings, the rules in
 * stored order with an editor, the last 24 hours of decisions with their prompt excerpts, and health.
 * Excerpts are decrypted by the store; a user who cannot read a decision's workspace sees that it exists,
 * not its text (docs/decisions.md "Dashboard pages").
 */
import type { RoutingHealth } from '../../core/routing/settings.js';
import type { RouterSettings, RoutingRule } from '../../core/routing/types.js';
import { csrfField, projectDocument, when, type ProjectFrame } from './layout.js';
import { html, type SafeHtml } from './markup.js';
import { projectPath } from './paths.js';
import { ruleForm, type RuleTarget } from './rule-form.js';
import { settingsForm } from './router-settings-form.js';

export interface RouterPageData {
  readonly settings: RouterSettings;
  /** The effective configuration (GET .../config): availability and embedding endpoint are read from it. */
  readonly config: Record<string, unknown>;
  /** Chat endpoints: rule targets, fallback and exclusion choices. */
  readonly targets: readonly RuleTarget[];
  readonly decisions: readonly Record<string, unknown>[];
  readonly health: RoutingHealth & Record<string, unknown>;
  readonly writable: boolean;
  /** Whether the user may read a decision's prompt excerpt (its workspace is one the user reads). */
  readonly mayReadWorkspace: (workspaceId: string | null) => boolean;
  /** A refused new-rule form, to show again. */
  readonly ruleFormSent?: URLSearchParams | null;
}

const text = (v: unknown): string => (typeof v === 'string' ? v : v === null || v === undefined ? '' : String(v));
const field = (o: unknown, k: string): unknown => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined);

function conditions(r: RoutingRule): string {
  const parts = [
    r.match.query_contains.length ? `contains ${r.match.query_contains.map((w) => JSON.stringify(w)).join(' and ')}` : '',
    r.match.min_input_tokens !== null ? `≥ ${r.match.min_input_tokens} input tokens` : '',
    r.match.exact_request_model !== null ? `model = ${r.match.exact_request_model}` : '',
  ];
  return parts.filter(Boolean).join('; ');
}

function rulesTable(frame: ProjectFrame, d: RouterPageData): SafeHtml {
  const { principal, project } = frame;
  const slug = (id: string): string => d.targets.find((t) => t.id === id)?.slug ?? `${id} (not available)`;
  if (d.settings.rules.length === 0) return html`<p class="muted">No rules: every turn is classified.</p>`;
  return html`<table class="rules"><thead><tr><th>#</th><th>Name</th><th>When</th><th>Route to</th><th>Priority</th><th>Enabled</th><th></th></tr></thead><tbody>
${d.settings.rules.map(
  (r, i) => html`<tr data-rule-id="${r.id}"><td>${i}</td><td>${r.name || html`<span class="muted">unnamed</span>`}<br><code>${r.id}</code></td><td>${conditions(r)}</td>
<td>${slug(r.action.endpoint_id)}${r.action.fallback_to_classification ? '' : html`<br><small>no fallback</small>`}</td><td>${r.priority}</td><td>${r.enabled ? 'yes' : 'no'}</td>
<td class="actions">${
    d.writable
      ? html`<a class="button" href="${projectPath(project.id, 'router', 'rules', r.id)}">Edit</a>
<form method="post" action="${projectPath(project.id, 'router', 'rules', r.id, 'delete')}">${csrfField(principal)}<button type="submit" class="danger">Delete</button></form>`
      : ''
  }</td></tr>`,
)}</tbody></table>`;
}

function decisionsTable(d: RouterPageData): SafeHtml {
  if (d.decisions.length === 0) return html`<p class="muted">No routed turns in the last 24 hours.</p>`;
  return html`<table class="decisions"><thead><tr><th>Time</th><th>Endpoint</th><th>Reason</th><th>Similarity</th><th>Prompt excerpt</th></tr></thead><tbody>
${d.decisions.map((row) => {
  const ws = typeof row.workspace_id === 'string' ? row.workspace_id : null;
  const score = typeof row.similarity_score === 'number' ? row.similarity_score.toFixed(3) : '—';
  const flags = [row.was_sticky === true ? 'sticky' : '', row.was_fallback === true ? 'fallback' : ''].filter(Boolean).join(', ');
  const excerpt = d.mayReadWorkspace(ws) ? html`<q>${text(row.query_preview)}</q>` : html`<span class="muted">hidden: a workspace you cannot read</span>`;
  return html`<tr><td>${when(typeof row.timestamp === 'number' ? row.timestamp * 1000 : Date.parse(text(row.timestamp)) || null)}</td><td>${text(row.endpoint_slug)}</td>
<td>${text(row.route_reason)}${flags ? html`<br><small>${flags}</small>` : ''}</td><td>${score}</td><td class="excerpt">${excerpt}</td></tr>`;
})}</tbody></table>`;
}

function healthBlock(h: RouterPageData['health'], config: Record<string, unknown>): SafeHtml {
  const counts: [string, number][] = [
    ['Decisions', h.decision_count],
    ['Classified', h.classified_count],
    ['Matched', h.matched_count],
    ['Sticky', h.sticky_count],
    ['Rule', h.rule_count],
    ['Fallback', h.fallback_count],
  ];
  const upstreams = Array.isArray(h.upstreams) ? (h.upstreams as unknown[]) : [];
  const state = text(field(field(config, 'availability'), 'state'));
  const embedding = field(config, 'embedding_endpoint');
  return html`<p>Availability: <strong class="state ${state}">${state.replace(/_/g, ' ')}</strong>; embedding endpoint: ${field(embedding, 'present') === true ? html`<code>${text(field(embedding, 'slug'))}</code>` : 'none'}.</p>
<dl class="counts">${counts.map(([k, v]) => html`<div><dt>${k}</dt><dd>${v}</dd></div>`)}<div><dt>Fallback %</dt><dd>${h.fallback_pct}</dd></div></dl>
${upstreams.length ? html`<table><thead><tr><th>Endpoint</th><th>Upstream servers up</th></tr></thead><tbody>${upstreams.map((u) => html`<tr><td>${text(field(u, 'endpoint_slug'))}</td><td>${text(field(u, 'servers_up'))} / ${text(field(u, 'servers_total'))}${field(u, 'healthy') === true ? '' : html` <span class="status revoked">unhealthy</span>`}</td></tr>`)}</tbody></table>` : ''}`;
}

export function renderRouterPage(frame: ProjectFrame, d: RouterPageData): string {
  const { principal, project } = frame;
  return projectDocument(
    frame,
    html`<section class="card"><h2>Health (last 24 hours)</h2>${healthBlock(d.health, d.config)}</section>
<section class="card"><h2>Settings</h2>${settingsForm(principal, projectPath(project.id, 'router', 'settings'), d.settings, d.targets, d.writable)}</section>
<section class="card"><h2>Rules</h2><p class="muted">Listed in stored order, not evaluation order.</p>${rulesTable(frame, d)}
${d.writable ? html`<h3>New rule</h3>${ruleForm(principal, projectPath(project.id, 'router', 'rules'), d.targets, null, d.ruleFormSent)}` : ''}</section>
<section class="card"><h2>Decisions (last 24 hours)</h2>${decisionsTable(d)}</section>`,
  );
}

/** The editor of one rule. */
export function renderRuleEditor(frame: ProjectFrame, rule: RoutingRule, targets: readonly RuleTarget[], sent?: URLSearchParams | null): string {
  const { principal, project } = frame;
  return projectDocument(
    frame,
    html`<p><a href="${projectPath(project.id, 'router')}">← Semantic router</a> · rule <code>${rule.id}</code></p>
<section class="card">${ruleForm(principal, projectPath(project.id, 'router', 'rules', rule.id), targets, rule, sent)}</section>`,
    `Edit rule ${rule.name || rule.id}`,
  );
}
