/**
 * The headline CPU comparison, gateway vs bare proxy per request (non-streamed and streamed; the gateway as
 * `serve` runs it by default, info logs on, and the tuned one at warn), in alternating rounds as
 * the limiter cost is measured. On this shared VM one 10 s run per target can land in a quiet minute for
 * one and a busy one for the other: three full runs of the same build gave 1.28x, 1.66x and 2.04x at 50
 * connections. Each round's pair runs back to back, so a busy minute moves both halves of a pair; the
 * figure is the median of the rounds' ratios.
 */
import { median, runAlternating } from './limiter-cost.js';
import { runScenario, type Row, type Scenario, type Target } from './scenarios.js';

export interface CpuRounds {
  readonly scenario: Scenario;
  /** Which gateway ran: the default config (info logs) or the tuned one (warn logs). */
  readonly gatewayLabel: string;
  /** What it is compared with: the bare proxy, or (for the access line's cost) the gateway at warn. */
  readonly baseLabel: string;
  readonly bare: readonly Row[];
  readonly gateway: readonly Row[];
}

export async function runCpuRounds(bare: Target, gateway: Target, scenario: Scenario, seconds: number, rounds: number, log: (msg: string) => void): Promise<CpuRounds> {
  const { first, second } = await runAlternating(bare, gateway, scenario, seconds, rounds, (i, b, g) =>
    log(`CPU rounds, ${scenario.label}, ${gateway.label} vs ${bare.label}, round ${i}: ${b.cpuUsPerReq?.toFixed(1) ?? '-'} us vs ${g.cpuUsPerReq?.toFixed(1) ?? '-'} us per request`),
  );
  return { scenario, gatewayLabel: gateway.label, baseLabel: bare.label, bare: first, gateway: second };
}

/** Each round's gateway / bare CPU per request, and their median. */
export function roundRatios(c: CpuRounds): { readonly ratios: readonly number[]; readonly median: number | null } {
  const ratios = c.bare.flatMap((b, i) => {
    const g = c.gateway[i]?.cpuUsPerReq ?? null;
    return b.cpuUsPerReq && g !== null ? [g / b.cpuUsPerReq] : [];
  });
  return { ratios, median: median(ratios) };
}

/**
 * Rounds over any number of targets, each round rotated and every other one reversed, so that each target
 * runs first, last and in between alike (a busy minute lands on all of them). Rows by target label, one a round.
 */
export async function runRotatingRounds(targets: readonly Target[], scenario: Scenario, seconds: number, rounds: number, log: (msg: string) => void): Promise<Map<string, Row[]>> {
  const rows = new Map<string, Row[]>(targets.map((t) => [t.label, []]));
  for (let i = 0; i < rounds; i++) {
    const rotated = targets.map((_, j) => targets[(i + j) % targets.length] as Target);
    for (const t of i % 2 === 0 ? rotated : rotated.reverse()) rows.get(t.label)?.push(await runScenario(t, scenario, seconds));
    log(`${scenario.label}, round ${i + 1}: ${targets.map((t) => `${t.label} ${rows.get(t.label)?.[i]?.cpuUsPerReq?.toFixed(1)} us (${rows.get(t.label)?.[i]?.load.completed} req)`).join(', ')}`);
  }
  return rows;
}
