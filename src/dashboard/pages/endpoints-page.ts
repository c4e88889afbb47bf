/**
 * The Endpoints and models page (issue 34), read-only: each endpoint of the project with its model, kind,
 * capabilities, prices, and its pool of upstream servers with their passive health (as /readyz reports
 * it, docs/decisions.md "Upstream pools, health and failover"), then the project's model aliases.
 */
import type { EndpointConfig } from '../../config.js';
import type { EndpointRecord } from '../../core/records.js';
import type { ModelAlias } from '../../core/store/router-store.js';
import type { PoolReport } from '../../upstream/upstream-pool.js';
import { projectDocument, type ProjectFrame } from './layout.js';
import { millis } from './ledger-kit.js';
import { html, type SafeHtml } from './markup.js';

export interface EndpointsPageData {
  readonly endpoints: readonly EndpointRecord[];
  readonly pools: ReadonlyMap<string, PoolReport>;
  readonly pricesOf: (endpointId: string) => EndpointConfig['prices'];
  readonly aliases: readonly ModelAlias[];
}

function capabilities(e: EndpointRecord): string {
  const m = e.model;
  const reasoning = m.reasoning === 'none' ? [] : [`reasoning ${Array.isArray(m.reasoning) ? m.reasoning.join('/') : m.reasoning}`];
  const parts = [...m.capabilities, ...reasoning, ...(m.reasoning_budget ? ['reasoning budget'] : []), `context ${m.context_window} tokens`];
  return parts.join(', ');
}

function prices(p: EndpointConfig['prices']): SafeHtml {
  if (!p) return html`<span class="muted">no prices</span>`;
  const lines = [
    p.input_per_million !== undefined ? `input $${p.input_per_million} / M tokens` : null,
    p.cached_input_per_million !== undefined ? `cached input $${p.cached_input_per_million} / M tokens` : null,
    p.output_per_million !== undefined ? `output $${p.output_per_million} / M tokens` : null,
    p.audio_per_second !== undefined ? `audio $${p.audio_per_second} / s` : null,
  ].filter((l): l is string => l !== null);
  return html`${lines.map((l, i) => html`${i > 0 ? html`<br>` : ''}${l}`)}`;
}

function servers(pool: PoolReport | undefined): SafeHtml {
  if (!pool) return html`<span class="muted">no pool</span>`;
  return html`<ul class="servers">${pool.servers.map(
    (s) => html`<li data-server="${s.url}"><code>${s.url}</code> <span class="status ${s.state}">${s.state}</span> <small class="muted">weight ${s.weight}, ${s.outstanding} in flight${s.consecutive_failures > 0 ? `, ${s.consecutive_failures} failures in a row` : ''}${s.last_failure ? `, last: ${s.last_failure}` : ''}${s.retry_in_ms !== null ? `, probe in ${millis(s.retry_in_ms)}` : ''}</small></li>`,
  )}</ul>`;
}

export function renderEndpointsPage(frame: ProjectFrame, d: EndpointsPageData): string {
  const rows = [...d.endpoints]
    .sort((a, b) => a.slug.localeCompare(b.slug))
    .map(
      (e) => html`<tr data-endpoint="${e.slug}"><td>${e.name}<br><small class="muted">${e.slug}</small></td><td><code>${e.model.id}</code>${e.model.name ? html`<br><small class="muted">${e.model.name}</small>` : ''}</td>
<td>${e.kind}</td><td>${e.tier}</td><td class="status ${e.status}">${e.status}</td><td class="capabilities">${capabilities(e)}</td><td class="prices">${prices(d.pricesOf(e.id))}</td><td>${servers(d.pools.get(e.id))}</td></tr>`,
    );
  const aliases =
    d.aliases.length === 0
      ? html`<p class="muted empty">No model aliases. They are made through the Models API (POST /{project}/v1/models).</p>`
      : html`<table class="aliases"><thead><tr><th>Alias</th><th>Target</th></tr></thead><tbody>${[...d.aliases]
          .sort((a, b) => a.alias.localeCompare(b.alias))
          .map((a) => html`<tr><td><code>${a.alias}</code></td><td><code>${a.target}</code></td></tr>`)}</tbody></table>`;
  return projectDocument(
    frame,
    html`<section class="card">${d.endpoints.length === 0 ? html`<p class="muted empty">This project has no endpoints.</p>` : html`<table class="endpoints"><thead><tr><th>Endpoint</th><th>Model</th><th>Kind</th><th>Tier</th><th>Status</th><th>Capabilities</th><th>Prices (USD)</th><th>Upstream servers</th></tr></thead><tbody>${rows}</tbody></table>`}</section>
<section class="card"><h2>Model aliases</h2>${aliases}</section>`,
  );
}
