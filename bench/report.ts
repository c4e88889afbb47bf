/** Markdown for stdout and bench/RESULTS.md. Prose stays minimal: the figures, how they were taken. */
import { roundRatios, type CpuRounds } from './cpu-rounds.js';
import { summarize, type LimiterCost } from './limiter-cost.js';
import type { LoadResult } from './load.js';
import type { HolResult, Probe, Row, TargetKey } from './scenarios.js';
import type { SequentialResult } from './ttfb.js';

export interface Soak {
  readonly target: string;
  readonly seconds: number;
  readonly rssBeforeKiB: number | null;
  readonly rssAfterKiB: number | null;
  readonly load: LoadResult;
}

export interface BenchReport {
  readonly command: string;
  readonly date: string;
  readonly nproc: number;
  readonly cpuModel: string;
  readonly node: string;
  readonly pinning: string;
  readonly seconds: number;
  readonly quick: boolean;
  readonly probes: readonly Probe[];
  readonly rows: readonly Row[];
  readonly ttfb: readonly { key: TargetKey; target: string; result: SequentialResult }[];
  readonly hol: readonly HolResult[];
  readonly cpuRounds: readonly CpuRounds[];
  readonly limiterCost: readonly LimiterCost[];
  readonly soak: Soak | null;
  readonly notes: readonly string[];
}

const int = (n: number): string => Math.round(n).toLocaleString('en-US');
const ms = (n: number | null): string => (n === null ? '-' : n < 1 ? n.toFixed(3) : n.toFixed(2));
const signedMs = (n: number): string => `${n >= 0 ? '+' : '-'}${ms(Math.abs(n))}`;
const us = (n: number | null): string => (n === null ? '-' : int(n));

function table(head: string[], rows: string[][]): string {
  const right = head.map((h) => /req\/s|ms|non-2xx|err|CPU|RSS|samples|growth/.test(h));
  return [
    `| ${head.join(' | ')} |`,
    `|${right.map((r) => (r ? '---:' : '---')).join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

function mainTable(rows: readonly Row[]): string {
  return table(
    ['scenario', 'target', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'errors', 'CPU/req us', 'CPU of'],
    rows.map((r) => [
      r.scenario.label,
      r.target.label,
      int(r.load.reqPerSec),
      ms(r.load.p50),
      ms(r.load.p99),
      int(r.load.non2xx),
      int(r.load.errors),
      us(r.cpuUsPerReq),
      r.target.cpuOf,
    ]),
  );
}

function find(rows: readonly Row[], scenarioId: string, key: TargetKey): Row | undefined {
  return rows.find((r) => r.scenario.id === scenarioId && r.target.key === key);
}

const suspect = (...loads: (LoadResult | undefined)[]): string =>
  loads.some((l) => l !== undefined && (l.non2xx > 0 || l.errors > 0)) ? ' (non-2xx or errors in a compared row)' : '';

function ratios(report: BenchReport): string[] {
  const lines: string[] = [];
  const ids = [...new Set(report.rows.map((r) => r.scenario.id))];
  for (const id of ids) {
    const gw = find(report.rows, id, 'gateway');
    const bare = find(report.rows, id, 'bare');
    if (!gw || !bare || gw.cpuUsPerReq === null || bare.cpuUsPerReq === null || bare.cpuUsPerReq === 0) continue;
    lines.push(
      `- CPU/req gateway vs bare, ${gw.scenario.label}: ${(gw.cpuUsPerReq / bare.cpuUsPerReq).toFixed(2)}x ` +
        `(${us(gw.cpuUsPerReq)} vs ${us(bare.cpuUsPerReq)} us)${suspect(gw.load, bare.load)}`,
    );
  }
  for (const c of report.cpuRounds) {
    const { ratios: each, median } = roundRatios(c);
    if (median !== null) {
      lines.push(
        `- CPU/req ${c.gatewayLabel} vs ${c.baseLabel}, ${c.scenario.label}, ${each.length} alternating rounds: median ratio ${median.toFixed(2)}x ` +
          `(rounds: ${each.map((r) => `${r.toFixed(2)}x`).join(', ')})${suspect(...c.bare.map((r) => r.load), ...c.gateway.map((r) => r.load))}`,
      );
    }
  }
  for (const s of report.limiterCost.map(summarize)) {
    if (s.onReqPerSec === null || s.offReqPerSec === null || s.lossPercent === null) continue;
    const cpu = s.onCpuUs !== null && s.offCpuUs !== null ? `; CPU/req ${us(s.onCpuUs)} vs ${us(s.offCpuUs)} us` : '';
    const change = s.lossPercent >= 0 ? `${s.lossPercent.toFixed(1)}% loss` : `${(-s.lossPercent).toFixed(1)}% gain, within noise`;
    const rounds = s.roundLossPercents.map((p) => `${p >= 0 ? '-' : '+'}${Math.abs(p).toFixed(1)}%`).join(', ');
    lines.push(
      `- limits on vs unmetered, ${s.label} (${s.roundLossPercents.length} alternating rounds in one gateway process; loss = median of the rounds' losses, ${rounds}): ` +
        `${int(s.onReqPerSec)} vs ${int(s.offReqPerSec)} req/s median (${change})${cpu}${s.failures > 0 ? ' (non-2xx or errors in a compared run)' : ''}`,
    );
  }
  for (const id of ['json-1', 'stream-1']) {
    const direct = find(report.rows, id, 'direct');
    if (!direct || direct.load.p50 === null || direct.load.p99 === null) continue;
    for (const key of ['bare', 'gateway'] as const) {
      const r = find(report.rows, id, key);
      if (!r || r.load.p50 === null || r.load.p99 === null) continue;
      lines.push(
        `- added latency vs direct, ${r.scenario.label}, ${r.target.label}: p50 ${signedMs(r.load.p50 - direct.load.p50)} ms, ` +
          `p99 ${signedMs(r.load.p99 - direct.load.p99)} ms${suspect(r.load, direct.load)}`,
      );
    }
  }
  if (!report.rows.some((r) => r.scenario.connections === 1)) lines.push('- added latency at 1 connection: not measured (quick mode runs 50 connections only)');
  const direct = report.ttfb.find((t) => t.key === 'direct');
  for (const t of report.ttfb) {
    if (!direct || t.key === 'direct' || t.result.ttfbP50 === null || direct.result.ttfbP50 === null) continue;
    const d99 = t.result.ttfbP99 !== null && direct.result.ttfbP99 !== null ? `, p99 ${signedMs(t.result.ttfbP99 - direct.result.ttfbP99)} ms` : '';
    const bad = t.result.non2xx > 0 ? ' (non-2xx answers)' : '';
    lines.push(`- TTFB added vs direct, ${t.target}: p50 ${signedMs(t.result.ttfbP50 - direct.result.ttfbP50)} ms${d99}${bad}`);
  }
  return lines;
}

export function renderReport(report: BenchReport): string {
  const out: string[] = [];
  out.push('# Benchmark results', '');
  out.push(`- command: \`${report.command}\``);
  out.push(`- date: ${report.date}`);
  out.push(`- machine: ${report.nproc} cores (nproc), ${report.cpuModel}, node ${report.node}`);
  out.push(`- pinning: ${report.pinning}`);
  out.push(`- duration per run: ${report.seconds} s${report.quick ? ' (BENCH_QUICK: 50 connections only)' : ''}`);
  out.push(
    '- latency percentiles: from every response (non-2xx included), sub-ms resolution; CPU/req: utime+stime of the named process from /proc, divided by completed requests',
  );
  for (const n of report.notes) out.push(`- ${n}`);
  out.push('', '## Probe (one request per kind)', '');
  out.push(
    table(
      ['target', 'non-streaming status', 'streaming status', 'SSE data frames'],
      report.probes.map((p) => [p.target, String(p.jsonStatus), String(p.streamStatus), String(p.streamFrames)]),
    ),
  );
  out.push('', '## Throughput and latency', '', mainTable(report.rows));
  if (report.ttfb.length > 0) {
    const n = report.ttfb[0]?.result.samples ?? 0;
    out.push('', `## Time to first SSE byte (1 connection, sequential, ${n} samples, raw socket)`, '');
    out.push(
      table(
        ['target', 'TTFB p50 ms', 'TTFB p99 ms', 'full response p50 ms', 'full response p99 ms', 'non-2xx'],
        report.ttfb.map((t) => [t.target, ms(t.result.ttfbP50), ms(t.result.ttfbP99), ms(t.result.totalP50), ms(t.result.totalP99), int(t.result.non2xx)]),
      ),
    );
  }
  if (report.hol.length > 0) {
    out.push('', '## Head of line: 20 connections of small requests, alone and beside 4 connections of 200,000-character prompts', '');
    const rows: string[][] = [];
    for (const h of report.hol) {
      rows.push([h.target, 'small, alone', int(h.alone.reqPerSec), ms(h.alone.p50), ms(h.alone.p99), int(h.alone.non2xx)]);
      rows.push([h.target, 'small, with large', int(h.small.reqPerSec), ms(h.small.p50), ms(h.small.p99), int(h.small.non2xx)]);
      rows.push([h.target, 'large (200k chars)', int(h.large.reqPerSec), ms(h.large.p50), ms(h.large.p99), int(h.large.non2xx)]);
    }
    out.push(table(['target', 'traffic', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx'], rows));
  }
  for (const c of report.cpuRounds) {
    out.push('', `## CPU per request, ${c.gatewayLabel} vs ${c.baseLabel}: ${c.scenario.label}, alternating rounds (ABBA), back to back`, '');
    const { ratios: each } = roundRatios(c);
    const rows = c.bare.map((b, i) => {
      const g = c.gateway[i];
      return [String(i + 1), us(b.cpuUsPerReq), g ? us(g.cpuUsPerReq) : '-', each[i] === undefined ? '-' : `${(each[i] as number).toFixed(2)}x`, int(b.load.reqPerSec), g ? int(g.load.reqPerSec) : '-'];
    });
    out.push(table(['round', `${c.baseLabel} CPU/req us`, `${c.gatewayLabel} CPU/req us`, 'ratio', `${c.baseLabel} req/s`, `${c.gatewayLabel} req/s`], rows));
  }
  if (report.limiterCost.length > 0) {
    out.push('', '## Limiter cost: limits on vs unmetered (one gateway process, two projects, alternating rounds)', '');
    const rows: string[][] = [];
    for (const c of report.limiterCost) {
      c.off.forEach((off, i) => {
        const on = c.on[i];
        rows.push([c.scenario.label, String(i + 1), int(off.load.reqPerSec), on ? int(on.load.reqPerSec) : '-', us(off.cpuUsPerReq), on ? us(on.cpuUsPerReq) : '-', int(off.load.non2xx + (on?.load.non2xx ?? 0))]);
      });
    }
    out.push(table(['scenario', 'round', 'unmetered req/s', 'limits on req/s', 'unmetered CPU/req us', 'limits on CPU/req us', 'non-2xx'], rows));
  }
  if (report.soak) {
    const s = report.soak;
    const growth = s.rssBeforeKiB && s.rssAfterKiB ? `${(((s.rssAfterKiB - s.rssBeforeKiB) / s.rssBeforeKiB) * 100).toFixed(1)}%` : '-';
    const mib = (k: number | null): string => (k === null ? '-' : (k / 1024).toFixed(1));
    out.push('', `## Soak: RSS of ${s.target} around a ${s.seconds} s, 50-connection non-streaming run`, '');
    out.push(
      table(
        ['RSS before MiB', 'RSS after MiB', 'growth', 'req/s', 'non-2xx'],
        [[mib(s.rssBeforeKiB), mib(s.rssAfterKiB), growth, int(s.load.reqPerSec), int(s.load.non2xx)]],
      ),
    );
  }
  out.push('', '## Ratios', '', ...(ratios(report).length > 0 ? ratios(report) : ['- none computable']), '');
  return out.join('\n');
}
