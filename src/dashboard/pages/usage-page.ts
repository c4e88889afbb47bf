/**
 * The usage page: requests and tokens per UTC day and per endpoint over the last days, as charts (inline
 * SVG) with the table under them. The totals are the usage API's (GET /v1/management/usage), read through
 * the same reader thread.
 */
import type { UsageTotals } from '../../store/usage-totals.js';
import { projectDocument, type ProjectFrame } from './layout.js';
import { html } from './markup.js';
import { barChart, columnChart } from './svg-chart.js';

export const USAGE_DAYS = 14;

export interface UsagePageData {
  /** The window's first UTC day (Unix ms) and its day count. */
  readonly startDay: number;
  readonly days: number;
  readonly byDay: readonly UsageTotals[];
  readonly byEndpoint: readonly UsageTotals[];
  readonly endpointLabel: (endpointId: string) => string;
}

const DAY_MS = 86_400_000;
const dayLabel = (ms: number): string => new Date(ms).toISOString().slice(5, 10);

export function renderUsagePage(frame: ProjectFrame, d: UsagePageData): string {
  const found = new Map(d.byDay.map((t) => [Number(t.group), t]));
  const days = Array.from({ length: d.days }, (_, i) => d.startDay + i * DAY_MS);
  const requests = days.map((day) => ({ label: dayLabel(day), segments: [{ value: found.get(day)?.requests ?? 0, cls: 's1', name: 'requests' }] }));
  const tokens = days.map((day) => {
    const t = found.get(day);
    return {
      label: dayLabel(day),
      segments: [
        { value: t?.promptTokens ?? 0, cls: 's2', name: 'prompt tokens' },
        { value: t?.completionTokens ?? 0, cls: 's3', name: 'completion tokens' },
      ],
    };
  });
  const endpoints = [...d.byEndpoint].sort((a, b) => b.requests - a.requests);
  const label = (t: UsageTotals): string => d.endpointLabel(String(t.group));
  const total = d.byDay.reduce((n, t) => ({ r: n.r + t.requests, p: n.p + t.promptTokens, c: n.c + t.completionTokens }), { r: 0, p: 0, c: 0 });
  return projectDocument(
    frame,
    html`<p>Last ${d.days} days (UTC): <strong>${total.r}</strong> requests, <strong>${total.p + total.c}</strong> tokens (${total.p} prompt, ${total.c} completion).</p>
<section class="card charts">
${columnChart('Requests per day', requests)}
${columnChart('Tokens per day', tokens)}
</section>
<section class="card charts">
${endpoints.length === 0 ? html`<p class="muted">No usage in this window.</p>` : html`${barChart('Requests per endpoint', endpoints.map((t) => ({ label: label(t), value: t.requests })), 's1')}
${barChart('Tokens per endpoint', endpoints.map((t) => ({ label: label(t), value: t.promptTokens + t.completionTokens, note: `${t.promptTokens} prompt, ${t.completionTokens} completion` })), 's2')}`}
</section>
<section class="card"><h2>Per endpoint</h2><table class="usage"><thead><tr><th>Endpoint</th><th>Requests</th><th>Prompt tokens</th><th>Completion tokens</th><th>Cached</th></tr></thead><tbody>
${endpoints.map((t) => html`<tr><td>${label(t)}</td><td>${t.requests}</td><td>${t.promptTokens}</td><td>${t.completionTokens}</td><td>${t.cachedTokens}</td></tr>`)}
</tbody></table></section>`,
  );
}
