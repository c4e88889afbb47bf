/**
 * The API keys page (SPEC "Key management": creation, rotation and revocation from the dashboard): the
 * project's keys, and for admins and owners a creation form (scopes, workspaces, IP filters, quota, expiry)
 * and rotate / revoke buttons. A new or rotated value is shown once, on the answer to the form that made it.
 * The form is turned into the management API's body and read by the API's own schema, so a bad field gets
 * the same refusal, in words, as it would over the API.
 */
import type { ApiKeyWire } from '../../app/key-management.js';
import { SCOPES } from '../../core/auth/scopes.js';
import type { DashboardPrincipal } from '../principal.js';
import { csrfField, projectDocument, when, type ProjectFrame } from './layout.js';
import { html, type SafeHtml } from './markup.js';
import { projectPath } from './paths.js';

export interface KeysPageData {
  readonly keys: readonly ApiKeyWire[];
  /** Key id -> its owning user (dashboard keys) or null. */
  readonly owners: ReadonlyMap<string, string | null>;
  readonly endpoints: readonly { readonly id: string; readonly slug: string }[];
  /** The workspaces the user can read: what a key may be confined to. */
  readonly workspaces: readonly { readonly id: string; readonly name: string }[];
  readonly writable: boolean;
  /** The value just minted (create or rotate), shown this once. */
  readonly revealed?: { readonly keyId: string; readonly value: string; readonly action: 'created' | 'rotated' } | null;
  /** What the refused form said, so it comes back filled in. */
  readonly form?: URLSearchParams | null;
}

const list = (xs: readonly string[]): string => (xs.length === 0 ? '—' : xs.join(', '));
const seconds = (s: number | null): number | null => (s === null ? null : s * 1000);

/** A key's reach: its list, else every workspace (no owner) or every one its owner reads, checked per request. */
function reach(principal: DashboardPrincipal, k: ApiKeyWire, owner: string | null): SafeHtml | string {
  if (k.allowed_workspace_ids !== null) return list(k.allowed_workspace_ids);
  if (owner === null) return html`<span class="muted">all</span>`;
  return html`<span class="muted">all ${owner === principal.userId ? 'you read' : 'its owner reads'}</span>`;
}

const ownerLabel = (principal: DashboardPrincipal, k: ApiKeyWire, owner: string | null): string =>
  owner === null ? k.source : owner === principal.userId ? 'yours' : owner;

function keyRow(principal: DashboardPrincipal, projectId: string, k: ApiKeyWire, writable: boolean, owner: string | null): SafeHtml {
  const actions =
    writable && k.status === 'active'
      ? html`<form method="post" action="${projectPath(projectId, 'keys', k.id, 'rotate')}">${csrfField(principal)}<button type="submit" data-action="rotate">Rotate</button></form>
<form method="post" action="${projectPath(projectId, 'keys', k.id, 'revoke')}">${csrfField(principal)}<button type="submit" class="danger" data-action="revoke">Revoke</button></form>`
      : '';
  const quota = k.quota_requests === 0 ? 'none' : `${k.quota_requests} / ${k.quota_window} s`;
  const ips = [k.allowed_ips.length ? `allow ${list(k.allowed_ips)}` : '', k.blocked_ips.length ? `block ${list(k.blocked_ips)}` : ''].filter(Boolean).join('; ') || 'no filter';
  return html`<tr data-key-id="${k.id}">
<td>${k.name ?? html`<span class="muted">unnamed</span>`}<br><code class="prefix">${k.prefix}…</code></td>
<td><span class="status ${k.status}">${k.status}</span>${k.status === 'active' && k.previous_value_valid_until !== null ? html`<br><small>old value valid until ${when(seconds(k.previous_value_valid_until))}</small>` : ''}</td>
<td>${list(k.scopes)}</td>
<td>${reach(principal, k, owner)}</td>
<td>${ips}</td>
<td>${quota}</td>
<td>${when(seconds(k.expires_at))}</td>
<td>${when(seconds(k.created_at))}<br><small>${ownerLabel(principal, k, owner)}</small></td>
<td class="actions">${actions}</td>
</tr>`;
}

function revealedBox(revealed: NonNullable<KeysPageData['revealed']>): SafeHtml {
  return html`<section class="secret" aria-live="polite">
<p>Key <code>${revealed.keyId}</code> ${revealed.action}. Copy its value now: it is not shown again.${revealed.action === 'rotated' ? ' The previous value keeps working for 24 hours.' : ''}</p>
<code class="value" id="revealed-value">${revealed.value}</code>
</section>`;
}

function createForm(principal: DashboardPrincipal, projectId: string, data: KeysPageData): SafeHtml {
  const f = data.form ?? new URLSearchParams();
  const checkedScopes = new Set(f.getAll('scopes').length > 0 ? f.getAll('scopes') : ['inference']);
  const checkedWs = new Set(f.getAll('workspaces'));
  const selected = f.get('workspace_mode') === 'selected';
  const value = (name: string): string => f.get(name) ?? '';
  return html`<section class="card">
<h2>Create a key</h2>
<form method="post" action="${projectPath(projectId, 'keys')}" class="stacked" id="create-key">
${csrfField(principal)}
<label>Name <input name="name" maxlength="256" value="${value('name')}"></label>
<fieldset><legend>Scopes</legend>
${SCOPES.map((s) => html`<label class="inline"><input type="checkbox" name="scopes" value="${s}"${checkedScopes.has(s) ? html` checked` : ''}> ${s}</label>`)}
</fieldset>
<fieldset><legend>Workspaces</legend>
<label class="inline"><input type="radio" name="workspace_mode" value="all"${selected ? '' : html` checked`}> Every workspace I can read (now and later)</label>
<label class="inline"><input type="radio" name="workspace_mode" value="selected"${selected ? html` checked` : ''}> Selected workspaces:</label>
${data.workspaces.map((w) => html`<label class="inline"><input type="checkbox" name="workspaces" value="${w.id}"${checkedWs.has(w.id) ? html` checked` : ''}> ${w.name} <code>${w.id}</code></label>`)}
</fieldset>
<label>Endpoint (optional: restricts the key to one)
<select name="endpoint_id"><option value="">every endpoint</option>${data.endpoints.map((e) => html`<option value="${e.id}"${value('endpoint_id') === e.id ? html` selected` : ''}>${e.slug}</option>`)}</select></label>
<label>Allowed IPs or CIDR ranges (comma or space separated) <input name="allowed_ips" value="${value('allowed_ips')}"></label>
<label>Blocked IPs or CIDR ranges <input name="blocked_ips" value="${value('blocked_ips')}"></label>
<div class="row"><label>Quota: requests <input name="quota_requests" inputmode="numeric" value="${value('quota_requests')}" placeholder="0 = none"></label>
<label>per seconds <input name="quota_window" inputmode="numeric" value="${value('quota_window')}" placeholder="60"></label></div>
<label>Expires at (UTC, optional) <input type="datetime-local" name="expires_at" value="${value('expires_at')}"></label>
<button type="submit">Create key</button>
</form>
</section>`;
}

export function renderKeysPage(frame: ProjectFrame, data: KeysPageData): string {
  const { principal, project } = frame;
  const rows = data.keys.map((k) => keyRow(principal, project.id, k, data.writable, data.owners.get(k.id) ?? null));
  const table =
    rows.length === 0
      ? html`<p class="muted">No API keys yet.</p>`
      : html`<table class="keys"><thead><tr><th>Name</th><th>Status</th><th>Scopes</th><th>Workspaces</th><th>IP filter</th><th>Quota</th><th>Expires</th><th>Created, by</th><th></th></tr></thead><tbody>${rows}</tbody></table>`;
  return projectDocument(
    frame,
    html`${data.revealed ? revealedBox(data.revealed) : ''}
${table}
${data.writable ? createForm(principal, project.id, data) : html`<p class="muted">Members read; admins and owners create, rotate and revoke keys.</p>`}`,
  );
}

const splitList = (raw: string | null): string[] | undefined => {
  const items = (raw ?? '').split(/[\s,]+/).filter((s) => s !== '');
  return items.length === 0 ? undefined : items;
};

/** A whole number as a number, anything else as typed (the API's schema then names what is wrong). */
const numberField = (raw: string | null): number | string | undefined => {
  const t = (raw ?? '').trim();
  if (t === '') return undefined;
  return /^-?\d+$/.test(t) ? Number(t) : t;
};

/**
 * The creation form as the management API's body (POST .../api-keys), so `parseCreateKey` applies the API's
 * rules. `datetime-local` has no zone: the form says UTC, and `Z` is added.
 */
export function keyBodyFromForm(form: URLSearchParams): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const name = (form.get('name') ?? '').trim();
  if (name !== '') body.name = name;
  const scopes = form.getAll('scopes');
  if (scopes.length > 0) body.scopes = scopes;
  // "Selected workspaces" with none ticked is sent as an empty list: SPEC's 400, in words.
  if (form.get('workspace_mode') === 'selected') body.allowed_workspace_ids = form.getAll('workspaces');
  const endpoint = form.get('endpoint_id') ?? '';
  if (endpoint !== '') body.endpoint_id = endpoint;
  const allowed = splitList(form.get('allowed_ips'));
  if (allowed) body.allowed_ips = allowed;
  const blocked = splitList(form.get('blocked_ips'));
  if (blocked) body.blocked_ips = blocked;
  const quota = numberField(form.get('quota_requests'));
  if (quota !== undefined) body.quota_requests = quota;
  const window = numberField(form.get('quota_window'));
  if (window !== undefined) body.quota_window = window;
  const expires = (form.get('expires_at') ?? '').trim();
  if (expires !== '') body.expires_at = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(expires) ? `${expires}:00Z` : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/.test(expires) ? `${expires}Z` : expires;
  return body;
}
