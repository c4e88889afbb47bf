/**
 * The rate limiter's cost (issue: "throughput with limits on vs unmetered, same run"): the same gateway
 * build twice, unmetered and with every limiter metered at ceilings no run reaches, measured in
 * alternating rounds (off-on, on-off, off-on, ...) so that a noisy neighbour on a shared machine, or a
 * cost of running second, hits both sides alike. The two sides are two projects of one gateway process (bench/config.ts `metered`), so the
 * JIT and heap are shared too. The loss is the median of the per-round losses: each round's pair ran back
 * to back, so a slow minute on the machine moves both halves of a pair rather than one side's median.
 */
import type { LoadResult } from './load.js';
import { runScenario, type Row, type Scenario, type Target } from './scenarios.js';

export interface LimiterCost {
  readonly scenario: Scenario;
  readonly off: readonly Row[];
  readonly on: readonly Row[];
}

/**
 * Two targets in alternating rounds, ABBA: the side that runs second alternates, so a cost of going
 * second (GC debt, a warmer or cooler core) falls on both sides alike instead of on one.
 */
export async function runAlternating(
  first: Target,
  second: Target,
  scenario: Scenario,
  seconds: number,
  rounds: number,
  onRound: (round: number, a: Row, b: Row) => void,
): Promise<{ readonly first: Row[]; readonly second: Row[] }> {
  const a: Row[] = [];
  const b: Row[] = [];
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      a.push(await runScenario(first, scenario, seconds));
      b.push(await runScenario(second, scenario, seconds));
    } else {
      b.push(await runScenario(second, scenario, seconds));
      a.push(await runScenario(first, scenario, seconds));
    }
    onRound(i + 1, a[i] as Row, b[i] as Row);
  }
  return { first: a, second: b };
}

export async function runLimiterCost(
  off: Target,
  on: Target,
  scenarios: readonly Scenario[],
  seconds: number,
  rounds: number,
  log: (msg: string) => void,
): Promise<LimiterCost[]> {
  const out: LimiterCost[] = [];
  for (const scenario of scenarios) {
    const { first, second } = await runAlternating(off, on, scenario, seconds, rounds, (i, a, b) =>
      log(`limiter cost, ${scenario.label}, round ${i}: off ${Math.round(a.load.reqPerSec)} req/s, on ${Math.round(b.load.reqPerSec)} req/s`),
    );
    out.push({ scenario, off: first, on: second });
  }
  return out;
}

export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] ?? null) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

export interface LimiterCostSummary {
  readonly label: string;
  readonly offReqPerSec: number | null;
  readonly onReqPerSec: number | null;
  readonly offCpuUs: number | null;
  readonly onCpuUs: number | null;
  /** Throughput lost with limits on, in percent: median of the rounds' losses (negative: gained, i.e. within noise). */
  readonly lossPercent: number | null;
  readonly roundLossPercents: readonly number[];
  readonly failures: number;
}

export function summarize(c: LimiterCost): LimiterCostSummary {
  const rps = (rows: readonly Row[]) => median(rows.map((r) => r.load.reqPerSec));
  const cpu = (rows: readonly Row[]) => median(rows.flatMap((r) => (r.cpuUsPerReq === null ? [] : [r.cpuUsPerReq])));
  const offReqPerSec = rps(c.off);
  const onReqPerSec = rps(c.on);
  const bad = (l: LoadResult): number => l.non2xx + l.errors;
  const roundLossPercents = c.off.flatMap((off, i) => {
    const on = c.on[i];
    return on && off.load.reqPerSec > 0 ? [(1 - on.load.reqPerSec / off.load.reqPerSec) * 100] : [];
  });
  return {
    label: c.scenario.label,
    offReqPerSec,
    onReqPerSec,
    offCpuUs: cpu(c.off),
    onCpuUs: cpu(c.on),
    lossPercent: median(roundLossPercents),
    roundLossPercents,
    failures: [...c.off, ...c.on].reduce((n, r) => n + bad(r.load), 0),
  };
}
