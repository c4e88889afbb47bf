/**
 * Issue 35's headline figures in one run: CPU per request of the gateway as a user runs it (default
 * config, info logs) against the bare proxy, non-streamed and streamed (20 chunks), 50 connections, and
 * the added p99 at 1 connection, in rotating rounds (runRotatingRounds) so a busy minute on the shared
 * machine falls on every side of a round. Ratios per round, then the median.
 *   npm run build && node dist/bench/bare-ratio.js [--rounds 7] [--seconds 4] [--other-dist <dist dir>]
 * --other-dist: that build's gateway as a third side (same config, info logs), for before/after; several
 * comma-separated dist dirs add a side each (an ablation: copies of dist/ with one cost taken out).
 */
import { parseArgs } from 'node:util';
import { runRotatingRounds } from './cpu-rounds.js';
import { median } from './limiter-cost.js';
import { runLoad } from './load.js';
import { SMALL_BODY, STREAM_BODY, STREAM_HEADERS, type Row, type Scenario, type Target } from './scenarios.js';
import { runIfEntryPoint, standaloneBench, startComparedSides, stopAll, type BenchSide } from './targets.js';

const SCENARIOS: readonly Scenario[] = [
  { id: 'json-50', label: 'non-streaming, 50 conn', stream: false, connections: 50 },
  { id: 'stream-50', label: 'streaming 20 chunks, 50 conn', stream: true, connections: 50 },
  { id: 'json-1', label: 'non-streaming, 1 conn', stream: false, connections: 1 },
  { id: 'stream-1', label: 'streaming 20 chunks, 1 conn', stream: true, connections: 1 },
];

const log = (msg: string): void => void process.stderr.write(`bare-ratio bench: ${msg}\n`);
const f = (v: number | null | undefined, d = 2): string => (v === null || v === undefined || Number.isNaN(v) ? '-' : v.toFixed(d));

/** Per side: median CPU/req, median ratio to the bare proxy's round, and (1 connection) the median p99. */
function summarize(scenario: Scenario, targets: readonly Target[], rows: Map<string, Row[]>): string[] {
  const bare = rows.get('bare proxy') ?? [];
  return targets.map((t) => {
    const own = rows.get(t.label) ?? [];
    const cpu = own.map((r) => r.cpuUsPerReq ?? Number.NaN);
    const ratios = cpu.map((c, i) => c / (bare[i]?.cpuUsPerReq ?? Number.NaN));
    const p99 = own.map((r) => r.load.p99 ?? Number.NaN);
    const p99Gap = p99.map((p, i) => p - (bare[i]?.load.p99 ?? Number.NaN));
    const failures = own.reduce((n, r) => n + r.load.non2xx + r.load.errors, 0);
    return (
      `${scenario.label} | ${t.label}: CPU/req median ${f(median(cpu), 1)} us; vs bare median ${f(median(ratios))}x (${ratios.map((r) => f(r)).join(', ')})` +
      `; p99 median ${f(median(p99), 3)} ms, minus the bare proxy's ${f(median(p99Gap), 3)} ms; non-2xx + errors ${failures}`
    );
  });
}

export async function main(): Promise<void> {
  const { values } = parseArgs({ options: { rounds: { type: 'string' }, seconds: { type: 'string' }, 'other-dist': { type: 'string' }, only: { type: 'string' } } });
  const rounds = Number(values.rounds ?? 7);
  const seconds = Number(values.seconds ?? 4);
  const bench = standaloneBench('switchboard-bare-ratio-');
  const [otherDist, ...moreDists] = values['other-dist']?.split(',') ?? [];
  const sides = await startComparedSides(bench, 'info', otherDist, moreDists);
  const side = (key: Target['key'], label: string, s: BenchSide, cpuOf: string): Target => ({ key, label, url: s.chatUrl, headers: s.headers, cpuPid: s.proc.pid, cpuOf });
  const targets: Target[] = [side('bare', 'bare proxy', sides.bare, 'bare proxy'), side('gateway-info', 'gateway (info logs)', sides.gateway, 'gateway')];
  if (sides.other) targets.push(side('gateway-info', 'other build (info logs)', sides.other, 'gateway'));
  sides.more.forEach((s, i) => targets.push(side('gateway-info', `${moreDists[i] ?? ''} (info logs)`, s, 'gateway')));
  for (const t of targets) {
    await runLoad({ url: t.url, connections: 50, seconds: 1, headers: t.headers, body: SMALL_BODY });
    await runLoad({ url: t.url, connections: 50, seconds: 1, headers: { ...t.headers, ...STREAM_HEADERS }, body: STREAM_BODY });
  }
  const out: string[] = [];
  for (const scenario of SCENARIOS.filter((s) => !values.only || s.id === values.only)) {
    const rows = await runRotatingRounds(targets, scenario, seconds, rounds, log);
    out.push(...summarize(scenario, targets, rows));
  }
  out.push(`${rounds} rounds of ${seconds} s per side; load ${bench.loadLine()}; pinned: ${bench.pinned}`);
  process.stdout.write(`${out.join('\n')}\n`);
  await stopAll();
}

runIfEntryPoint(import.meta.url, 'bare-ratio', main);
