/**
 * The webhooks page (SPEC "Webhooks"): the project's endpoints and a creation form (the signing secret is
 * shown once, on the answer), and per endpoint its deliveries, a test delivery, enable / disable and
 * delete. The forms become the API's bodies and are read by the API's schemas; the writes are the
 * WebhookManager's, which the API routes call too.
 */
import { EVENT_TYPES } from '../../core/webhooks/event-types.js';
import type { DeliveryRecord, WebhookEndpointRecord } from '../../core/webhooks/delivery.js';
import type { TestResult } from '../../core/webhooks/webhook-manager.js';
import { csrfField, projectDocument, when, type ProjectFrame } from './layout.js';
import { html, type SafeHtml } from './markup.js';
import { projectPath } from './paths.js';

export interface WebhooksPageData {
  readonly webhooks: readonly WebhookEndpointRecord[];
  readonly writable: boolean;
  readonly secret?: { readonly webhookId: string; readonly value: string } | null;
  readonly form?: URLSearchParams | null;
}

const SUBSCRIBABLE = Object.keys(EVENT_TYPES);

function createForm(frame: ProjectFrame, form: URLSearchParams | null | undefined): SafeHtml {
  const picked = new Set(form?.getAll('events') ?? []);
  return html`<section class="card"><h2>Add an endpoint</h2>
<form method="post" action="${projectPath(frame.project.id, 'webhooks')}" class="stacked" id="create-webhook">
${csrfField(frame.principal)}
<label>URL (https) <input name="url" type="url" required value="${form?.get('url') ?? ''}"></label>
<label>Description <input name="description" value="${form?.get('description') ?? ''}"></label>
<fieldset><legend>Events</legend><div class="columns">
${SUBSCRIBABLE.map((t) => html`<label class="inline"><input type="checkbox" name="events" value="${t}"${picked.has(t) ? html` checked` : ''}> <code>${t}</code></label>`)}
</div></fieldset>
<button type="submit">Add endpoint</button>
</form></section>`;
}

export function renderWebhooksPage(frame: ProjectFrame, d: WebhooksPageData): string {
  const { project } = frame;
  const secret = d.secret
    ? html`<section class="secret"><p>Endpoint <code>${d.secret.webhookId}</code> added. Copy its signing secret now: it is not shown again.</p><code class="value" id="revealed-value">${d.secret.value}</code></section>`
    : '';
  const table =
    d.webhooks.length === 0
      ? html`<p class="muted">No webhook endpoints.</p>`
      : html`<table class="webhooks"><thead><tr><th>URL</th><th>Events</th><th>State</th><th>Created</th></tr></thead><tbody>
${d.webhooks.map(
  (w) => html`<tr><td><a href="${projectPath(project.id, 'webhooks', w.id)}">${w.url}</a>${w.description ? html`<br><small>${w.description}</small>` : ''}</td>
<td>${w.events.join(', ')}</td><td><span class="status ${w.isActive ? 'active' : 'revoked'}">${w.isActive ? 'active' : 'disabled'}</span></td><td>${when(w.createdAt)}</td></tr>`,
)}</tbody></table>`;
  return projectDocument(frame, html`${secret}${table}${d.writable ? createForm(frame, d.form) : ''}`);
}

export interface WebhookDetailData {
  readonly webhook: WebhookEndpointRecord;
  readonly deliveries: readonly DeliveryRecord[];
  readonly writable: boolean;
  readonly test?: TestResult | null;
}

function testBox(t: TestResult): SafeHtml {
  return html`<section class="card test-result ${t.success ? 'ok' : 'error'}"><h3>Test delivery ${t.success ? 'delivered' : 'failed'}</h3>
<p>HTTP status: ${t.http_status ?? '—'}${t.error_message ? html`; ${t.error_message}` : ''}</p>${t.response_body ? html`<pre>${t.response_body}</pre>` : ''}</section>`;
}

export function renderWebhookDetail(frame: ProjectFrame, d: WebhookDetailData): string {
  const { principal, project } = frame;
  const w = d.webhook;
  const action = (verb: string): string => projectPath(project.id, 'webhooks', w.id, verb);
  const controls = d.writable
    ? html`<div class="actions">
<form method="post" action="${action('test')}">${csrfField(principal)}<button type="submit">Send test delivery</button></form>
<form method="post" action="${action(w.isActive ? 'disable' : 'enable')}">${csrfField(principal)}<button type="submit">${w.isActive ? 'Disable' : 'Enable'}</button></form>
<form method="post" action="${action('delete')}">${csrfField(principal)}<button type="submit" class="danger">Delete</button></form>
</div>`
    : '';
  const rows = d.deliveries.map(
    (x) => html`<tr><td><code>${x.id}</code></td><td>${x.eventType}</td><td><span class="status ${x.state}">${x.state === 'sending' ? 'pending' : x.state}</span></td>
<td>${x.attemptCount}</td><td>${x.httpStatus ?? '—'}</td><td>${when(x.createdAt)}</td><td><small>${x.responseBody ?? ''}</small></td></tr>`,
  );
  return projectDocument(
    frame,
    html`<p><a href="${projectPath(project.id, 'webhooks')}">← Webhooks</a></p>
<section class="card"><p><strong>${w.url}</strong> <span class="status ${w.isActive ? 'active' : 'revoked'}">${w.isActive ? 'active' : 'disabled'}</span></p>
<p>${w.description ?? ''}</p><p>Events: ${w.events.join(', ')}</p><p><small>id <code>${w.id}</code></small></p>${controls}</section>
${d.test ? testBox(d.test) : ''}
<section class="card"><h2>Deliveries</h2>${
      rows.length === 0
        ? html`<p class="muted">No deliveries yet.</p>`
        : html`<table><thead><tr><th>Id</th><th>Event</th><th>Status</th><th>Attempts</th><th>HTTP</th><th>Created</th><th>Response</th></tr></thead><tbody>${rows}</tbody></table>`
    }</section>`,
    'Webhook endpoint',
  );
}

/** The creation form as the API's body (POST /v1/webhooks). */
export function webhookBodyFromForm(form: URLSearchParams): Record<string, unknown> {
  const body: Record<string, unknown> = { url: (form.get('url') ?? '').trim(), events: form.getAll('events') };
  const description = (form.get('description') ?? '').trim();
  if (description !== '') body.description = description;
  return body;
}
