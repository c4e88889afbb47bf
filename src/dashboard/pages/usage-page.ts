/**
 * The usage and cost page: requests and tokens per UTC day and per endpoint over a range of days, as charts
 * (inline SVG), then money and tokens per day, key, model and endpoint (issue 34), named (keys by name,
 * endpoints by name and slug), with a CSV of exactly those tables. The totals are the usage API's (GET
 * /v1/management/usage), read through the same port; cost is the exact decimal of the recorded
 * nano-dollars, a dash where nothing in the group was priced.
 */
import type { UsageTotals } from '../../core/store/usage-store.js';
import { projectDocument, type ProjectFrame } from './layout.js';
import { isoDay, money, type DayRange, type Labels } from './ledger-kit.js';
import { html } from './markup.js';
import { projectPath } from './paths.js';
import { barChart, columnChart } from './svg-chart.js';

export const USAGE_DAYS = 14;

export interface UsagePageData {
  readonly range: DayRange;
  readonly byDay: readonly UsageTotals[];
  readonly byKey: readonly UsageTotals[];
  readonly byModel: readonly UsageTotals[];
  readonly byEndpoint: readonly UsageTotals[];
  readonly labels: Labels;
}

/** One line of a cost table, as the page and its CSV show it. */
export interface CostLine {
  readonly name: string;
  readonly requests: number;
  readonly tokensIn: number;
  readonly tokensOut: number;
  readonly cached: number;
  /** `$1.50`, or a dash when unpriced. */
  readonly cost: string;
  readonly unpriced: number;
}

export interface CostTable {
  /** `day`, `key`, `model`, `endpoint`: the CSV's first column. */
  readonly dimension: string;
  readonly title: string;
  readonly lines: readonly CostLine[];
}

const DAY_MS = 86_400_000;
const dayLabel = (ms: number): string => new Date(ms).toISOString().slice(5, 10);

const lineOf = (name: string, t: UsageTotals): CostLine => ({
  name,
  requests: t.requests,
  tokensIn: t.promptTokens,
  tokensOut: t.completionTokens,
  cached: t.cachedTokens,
  cost: money(t.costNanos),
  unpriced: t.unpricedRequests,
});

/** The four tables, in the order shown; the CSV is made from the same. */
export function costTables(d: UsagePageData): CostTable[] {
  const named = (rows: readonly UsageTotals[], name: (t: UsageTotals) => string): CostLine[] =>
    rows.map((t) => lineOf(name(t), t)).sort((a, b) => b.requests - a.requests || a.name.localeCompare(b.name));
  return [
    { dimension: 'day', title: 'Per day (UTC)', lines: d.byDay.map((t) => lineOf(isoDay(Number(t.group)), t)) },
    { dimension: 'key', title: 'Per key', lines: named(d.byKey, (t) => d.labels.key(String(t.group))) },
    { dimension: 'model', title: 'Per model', lines: named(d.byModel, (t) => (t.group === null ? '(no model recorded)' : String(t.group))) },
    { dimension: 'endpoint', title: 'Per endpoint', lines: named(d.byEndpoint, (t) => d.labels.endpoint(String(t.group))) },
  ];
}

const CSV_HEADER = ['dimension', 'name', 'requests', 'tokens_in', 'tokens_out', 'cached_tokens', 'cost_usd', 'unpriced_requests'];

/** A cell as a spreadsheet reads it: quoted when needed, and never a formula (a key named `=cmd()`). */
function cell(value: string | number): string {
  let s = String(value);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function costCsv(tables: readonly CostTable[]): string {
  const rows = tables.flatMap((t) => t.lines.map((l) => [t.dimension, l.name, l.requests, l.tokensIn, l.tokensOut, l.cached, l.cost === '—' ? '' : l.cost.slice(1), l.unpriced]));
  return [CSV_HEADER, ...rows].map((r) => r.map(cell).join(',')).join('\r\n') + '\r\n';
}

function rangeForm(frame: ProjectFrame, range: DayRange) {
  const csv = `${projectPath(frame.project.id, 'usage')}.csv?${new URLSearchParams({ from: range.from, to: range.to }).toString()}`;
  return html`<form class="filters" id="usage-range" method="get" action="${projectPath(frame.project.id, 'usage')}">
<label>From <input type="date" name="from" value="${range.from}"></label>
<label>To <input type="date" name="to" value="${range.to}"></label>
<button type="submit">Show</button> <a class="button" id="usage-csv" href="${csv}" download>Download CSV</a>
</form>`;
}

function table(t: CostTable) {
  const body =
    t.lines.length === 0
      ? html`<p class="muted empty">No usage in this range.</p>`
      : html`<table class="cost" data-dimension="${t.dimension}"><thead><tr><th>${t.dimension === 'day' ? 'Day' : t.dimension[0]?.toUpperCase() + t.dimension.slice(1)}</th><th>Requests</th><th>Tokens in</th><th>Tokens out</th><th>Cached</th><th>Cost (USD)</th><th>Unpriced</th></tr></thead><tbody>
${t.lines.map((l) => html`<tr><td>${l.name}</td><td>${l.requests}</td><td>${l.tokensIn}</td><td>${l.tokensOut}</td><td>${l.cached}</td><td class="money">${l.cost}</td><td>${l.unpriced}</td></tr>`)}
</tbody></table>`;
  return html`<section class="card"><h2>${t.title}</h2>${body}</section>`;
}

export function renderUsagePage(frame: ProjectFrame, d: UsagePageData): string {
  const { range } = d;
  const found = new Map(d.byDay.map((t) => [Number(t.group), t]));
  const days = Array.from({ length: range.days }, (_, i) => range.start + i * DAY_MS);
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
  const label = (t: UsageTotals): string => d.labels.endpoint(String(t.group));
  const total = d.byDay.reduce((n, t) => ({ r: n.r + t.requests, p: n.p + t.promptTokens, c: n.c + t.completionTokens }), { r: 0, p: 0, c: 0 });
  const priced = d.byDay.filter((t) => t.costNanos !== null);
  const cost = priced.length === 0 ? null : priced.reduce((n, t) => n + (t.costNanos ?? 0n), 0n);
  return projectDocument(
    frame,
    html`<section class="card">${rangeForm(frame, range)}</section>
<p>${range.from} to ${range.to} (UTC): <strong>${total.r}</strong> requests, <strong>${total.p + total.c}</strong> tokens (${total.p} prompt, ${total.c} completion), cost <strong id="usage-total-cost">${money(cost)}</strong>.</p>
<section class="card charts">
${columnChart('Requests per day', requests)}
${columnChart('Tokens per day', tokens)}
</section>
<section class="card charts">
${endpoints.length === 0 ? html`<p class="muted">No usage in this window.</p>` : html`${barChart('Requests per endpoint', endpoints.map((t) => ({ label: label(t), value: t.requests })), 's1')}
${barChart('Tokens per endpoint', endpoints.map((t) => ({ label: label(t), value: t.promptTokens + t.completionTokens, note: `${t.promptTokens} prompt, ${t.completionTokens} completion` })), 's2')}`}
</section>
${costTables(d).map(table)}`,
  );
}
