/**
 * Charts drawn on the server as inline SVG: no script, no outside asset, and no style attribute (the CSP
 * forbids inline styles); colours come from classes in our stylesheet. Pure functions of their numbers.
 */
import { html, type SafeHtml } from './markup.js';

export interface Segment {
  readonly value: number;
  /** A class of the stylesheet: `s1`, `s2`. */
  readonly cls: string;
  readonly name: string;
}

export interface Column {
  readonly label: string;
  readonly segments: readonly Segment[];
}

const WIDTH = 720;
const HEIGHT = 220;
const LEFT = 56;
const BOTTOM = 28;
const TOP = 12;

/** 1, 2, 5 x 10^n at or above `max`: the axis top, so the ticks read as round numbers. */
export function niceCeiling(max: number): number {
  if (max <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

export function compact(n: number): string {
  if (n >= 1e9) return `${+(n / 1e9).toFixed(1)}G`;
  if (n >= 1e6) return `${+(n / 1e6).toFixed(1)}M`;
  if (n >= 1e3) return `${+(n / 1e3).toFixed(1)}k`;
  return String(n);
}

/** Stacked columns, one per label (a day), with a labelled y axis and a legend. */
export function columnChart(title: string, columns: readonly Column[]): SafeHtml {
  const top = niceCeiling(Math.max(0, ...columns.map((c) => c.segments.reduce((n, s) => n + s.value, 0))));
  const plotH = HEIGHT - BOTTOM - TOP;
  const slot = (WIDTH - LEFT) / Math.max(1, columns.length);
  const barW = Math.max(2, slot * 0.7);
  const y = (v: number): number => TOP + plotH - (v / top) * plotH;
  // Counts are whole: a half-way tick of 2.5 requests would read oddly, so it is drawn only when whole.
  const ticks = [0, top / 2, top].filter((t) => Number.isInteger(t));
  const labelEvery = Math.ceil(columns.length / 10);
  const legend = [...new Map(columns.flatMap((c) => c.segments.map((s) => [s.cls, s.name] as const))).entries()];
  return html`<figure class="chart"><figcaption>${title}</figcaption>
<svg viewBox="0 0 ${WIDTH} ${HEIGHT}" width="100%" role="img" aria-label="${title}" xmlns="http://www.w3.org/2000/svg">
${ticks.map((t) => html`<line class="grid" x1="${LEFT}" x2="${WIDTH}" y1="${y(t)}" y2="${y(t)}"/><text class="axis" x="${LEFT - 6}" y="${y(t) + 4}" text-anchor="end">${compact(t)}</text>`)}
${columns.map((c, i) => {
  let base = 0;
  const x = LEFT + i * slot + (slot - barW) / 2;
  const rects = c.segments.map((s) => {
    const y0 = y(base + s.value);
    const h = y(base) - y0;
    base += s.value;
    return h <= 0 ? '' : html`<rect class="${s.cls}" x="${x.toFixed(1)}" y="${y0.toFixed(1)}" width="${barW.toFixed(1)}" height="${h.toFixed(1)}"><title>${c.label}: ${s.name} ${s.value}</title></rect>`;
  });
  const label = i % labelEvery === 0 ? html`<text class="axis" x="${(x + barW / 2).toFixed(1)}" y="${HEIGHT - 8}" text-anchor="middle">${c.label}</text>` : '';
  return html`${rects}${label}`;
})}
</svg>
<p class="legend">${legend.map(([cls, name]) => html`<span class="key ${cls}"></span>${name} `)}</p>
</figure>`;
}

export interface Bar {
  readonly label: string;
  readonly value: number;
  readonly note?: string;
}

/** Horizontal bars, one per row (an endpoint), longest first as given. */
export function barChart(title: string, bars: readonly Bar[], cls = 's1'): SafeHtml {
  const rowH = 24;
  const labelW = 180;
  const height = Math.max(1, bars.length) * rowH + 8;
  const top = Math.max(1, ...bars.map((b) => b.value));
  const span = WIDTH - labelW - 80;
  return html`<figure class="chart"><figcaption>${title}</figcaption>
<svg viewBox="0 0 ${WIDTH} ${height}" width="100%" role="img" aria-label="${title}" xmlns="http://www.w3.org/2000/svg">
${bars.map((b, i) => {
  const w = (b.value / top) * span;
  const yy = 4 + i * rowH;
  return html`<text class="axis" x="${labelW - 8}" y="${yy + 15}" text-anchor="end">${b.label}</text><rect class="${cls}" x="${labelW}" y="${yy + 3}" width="${Math.max(w, b.value > 0 ? 1 : 0).toFixed(1)}" height="${rowH - 8}"><title>${b.label}: ${b.value}${b.note ? ` (${b.note})` : ''}</title></rect><text class="axis" x="${(labelW + w + 6).toFixed(1)}" y="${yy + 15}">${compact(b.value)}</text>`;
})}
</svg></figure>`;
}
