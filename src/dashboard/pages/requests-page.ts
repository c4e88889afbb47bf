/**
 * The Requests page (issue 34): the project's ledger rows, newest first, a page at a time, filtered by key,
 * model, status and a range of UTC days; each row opens its detail (request id, routing decision, upstream
 * server, retries). The ledger holds no prompt or answer text, and the decision's excerpt is not shown
 * here (SPEC keeps excerpts to the decisions route and the router page).
 */
import { REQUEST_STATUSES, type RequestEntry } from '../../core/store/usage-store.js';
import { projectDocument, when, type ProjectFrame } from './layout.js';
import { millis, money, type DayRange, type Labels } from './ledger-kit.js';
import { html, type SafeHtml } from './markup.js';
import { projectPath } from './paths.js';

export interface RequestFilters {
  readonly range: DayRange;
  readonly keyId: string | null;
  readonly model: string | null;
  readonly status: string | null;
}

export interface RequestsPageData {
  readonly filters: RequestFilters;
  readonly rows: readonly RequestEntry[];
  readonly labels: Labels;
  /** The query string of the next (older) page; null on the last. */
  readonly olderQuery: string | null;
  /** Whether this page is past the first (a link back to the newest). */
  readonly paged: boolean;
}

/** The filters as a query string (without the cursor). */
export function filterQuery(f: RequestFilters): URLSearchParams {
  const q = new URLSearchParams({ from: f.range.from, to: f.range.to });
  if (f.keyId !== null) q.set('key', f.keyId);
  if (f.model !== null) q.set('model', f.model);
  if (f.status !== null) q.set('status', f.status);
  return q;
}

const option = (value: string, label: string, selected: boolean): SafeHtml => html`<option value="${value}"${selected ? html` selected` : ''}>${label}</option>`;

function filterForm(projectId: string, f: RequestFilters, labels: Labels): SafeHtml {
  return html`<form class="filters" id="request-filters" method="get" action="${projectPath(projectId, 'requests')}">
<label>Key <select name="key"><option value="">Any key</option>${labels.keys.map((k) => option(k.id, k.label, f.keyId === k.id))}</select></label>
<label>Model <select name="model"><option value="">Any model</option>${labels.models.map((m) => option(m, m, f.model === m))}</select></label>
<label>Status <select name="status"><option value="">Any status</option>${REQUEST_STATUSES.map((s) => option(s, s, f.status === s))}</select></label>
<label>From <input type="date" name="from" value="${f.range.from}"></label>
<label>To <input type="date" name="to" value="${f.range.to}"></label>
<button type="submit">Filter</button> <a href="${projectPath(projectId, 'requests')}">Reset</a>
</form>`;
}

function row(projectId: string, r: RequestEntry, labels: Labels): SafeHtml {
  const status = r.errorCode === null ? r.status : `${r.status} (${r.errorCode})`;
  return html`<tr data-request-id="${r.requestId}">
<td><a href="${projectPath(projectId, 'requests', String(r.id))}">${when(r.createdAt)}</a></td>
<td>${labels.key(r.keyId)}</td><td>${labels.workspace(r.workspaceId)}</td>
<td>${r.model ?? '—'}<br><small class="muted">${labels.endpoint(r.endpointId)}</small></td>
<td>${r.route}</td><td class="status ${r.status}">${status}</td>
<td>${millis(r.latencyMs)}</td><td>${millis(r.ttftMs)}</td>
<td>${r.promptTokens}</td><td>${r.completionTokens}</td><td>${money(r.costNanos)}</td>
</tr>`;
}

export function renderRequestsPage(frame: ProjectFrame, d: RequestsPageData): string {
  const id = frame.project.id;
  const base = projectPath(id, 'requests');
  const table =
    d.rows.length === 0
      ? html`<p class="muted empty">No requests match these filters.</p>`
      : html`<table class="requests"><thead><tr><th>Time</th><th>Key</th><th>Workspace</th><th>Model and endpoint</th><th>Route</th><th>Status</th><th>Latency</th><th>First token</th><th>Tokens in</th><th>Tokens out</th><th>Cost</th></tr></thead>
<tbody>${d.rows.map((r) => row(id, r, d.labels))}</tbody></table>`;
  const pager = html`<p class="pager">${d.paged ? html`<a href="${`${base}?${filterQuery(d.filters).toString()}`}">Newest</a> ` : ''}${d.olderQuery !== null ? html`<a rel="next" href="${`${base}?${d.olderQuery}`}">Older</a>` : ''}</p>`;
  return projectDocument(
    frame,
    html`<section class="card">${filterForm(id, d.filters, d.labels)}</section>
<section class="card">${table}${pager}</section>`,
  );
}

const field = (name: string, value: string | number | null | undefined): SafeHtml =>
  html`<div><dt>${name}</dt><dd>${value === null || value === undefined || value === '' ? '—' : value}</dd></div>`;

/** The decision's fields shown (SPEC "Routing decision row"), never `query_preview`. */
const DECISION_FIELDS = [
  'route_reason', 'endpoint_slug', 'endpoint_name', 'similarity_score', 'matched_keywords', 'was_sticky', 'was_fallback', 'rule_id',
  'fallback_reason', 'evicted_incumbent_id', 'filtered_out', 'candidates', 'router_id', 'client_mode', 'route_time_ms',
] as const;

const shown = (v: unknown): string => (v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));

export function renderRequestDetail(frame: ProjectFrame, r: RequestEntry, labels: Labels, decision: Record<string, unknown> | null): string {
  const decisionPart =
    decision === null
      ? html`<p class="muted">No routing decision: ${r.route === 'chat' ? 'the request named its endpoint.' : 'none was recorded, or it is older than the 24 hours decisions are kept.'}</p>`
      : html`<dl class="detail decision">${DECISION_FIELDS.map((k) => field(k, shown(decision[k])))}</dl>`;
  return projectDocument(
    frame,
    html`<p><a href="${projectPath(frame.project.id, 'requests')}">All requests</a></p>
<section class="card"><dl class="detail request">
${field('Request id', r.requestId)}${field('Time', when(r.createdAt))}${field('Key', labels.key(r.keyId))}${field('Workspace', labels.workspace(r.workspaceId))}
${field('Endpoint', labels.endpoint(r.endpointId))}${field('Model', r.model)}${field('Route', r.route)}${field('Status', r.status)}${field('Error code', r.errorCode)}
${field('Service tier', r.serviceTier)}${field('Latency', millis(r.latencyMs))}${field('Time to first token', millis(r.ttftMs))}
${field('Prompt tokens', r.promptTokens)}${field('Cached tokens', r.cachedTokens)}${field('Completion tokens', r.completionTokens)}${field('Reasoning tokens', r.reasoningTokens)}
${field('Cost', money(r.costNanos))}${field('Upstream server', r.upstreamServer)}${field('Retries', r.retries)}
</dl></section>
<section class="card"><h2>Routing decision</h2>${decisionPart}</section>`,
    `Request ${r.requestId}`,
  );
}
