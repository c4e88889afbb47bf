/**
 * Which garbage-collection regime a gateway settles into under load, run after run (issue 35). A fresh
 * gateway per run (V8's young generation starts over), alone on core 1 with the simulator and this client
 * on core 0, `--trace-gc-nvp` on; per run: CPU per request by thread name (main, V8's helper threads...),
 * scavenges, bytes promoted per scavenge and the scavenge pause, read from the gateway's own GC trace.
 * Round 7 (bench/RESULTS.md) found two regimes, same build, run to run: ~50 KB promoted a scavenge, or
 * ~5 MB with the helper threads' CPU tripled.
 *   npm run build && node dist/bench/gc-regime.js [--runs 6] [--seconds 8] [--side json|stream|resp|resp-stored] [--dist <dist>,<dist>] [--main-alone]
 * --dist: builds to alternate run by run (default this one), to count each build's runs in each regime.
 * --main-alone: the gateway's other threads moved to core 0 (with BENCH_PROFILE_DIR, a clean main-thread profile).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { clkTck, threadTicks } from './cpu.js';
import { BENCH_MODEL, writeBenchConfig } from './config.js';
import { median } from './limiter-cost.js';
import { runLoad } from './load.js';
import { SMALL_BODY, STREAM_BODY, STREAM_HEADERS } from './scenarios.js';
import { runIfEntryPoint, standaloneBench, startGateway, startSimulator, stopAll } from './targets.js';

/** What each run sends: a chat turn, streamed or not, or a streamed Responses turn, stored or not. */
const RESPONSES_BODY = { model: BENCH_MODEL, input: 'Say something about benchmarks.', stream: true };
const SIDES: Readonly<Record<string, { path: string; body: string; headers: Record<string, string> }>> = {
  json: { path: 'chat/completions', body: SMALL_BODY, headers: {} },
  stream: { path: 'chat/completions', body: STREAM_BODY, headers: STREAM_HEADERS },
  resp: { path: 'responses', body: JSON.stringify({ ...RESPONSES_BODY, store: false }), headers: { 'content-type': 'application/json' } },
  'resp-stored': { path: 'responses', body: JSON.stringify(RESPONSES_BODY), headers: { 'content-type': 'application/json' } },
};

const log = (msg: string): void => void process.stderr.write(`gc-regime bench: ${msg}\n`);

interface GcTrace {
  readonly scavenges: number;
  readonly promotedKB: number[];
  readonly pauseMs: number[];
}

/** The scavenges of a `--trace-gc-nvp` log after byte `from`: bytes promoted and the main thread's pause. */
export function scavengesIn(text: string): GcTrace {
  const promotedKB: number[] = [];
  const pauseMs: number[] = [];
  for (const line of text.split('\n')) {
    if (!line.includes('gc=s ')) continue;
    const promoted = /\bpromoted=(\d+)/.exec(line);
    const pause = /\bpause=([\d.]+)/.exec(line);
    if (promoted) promotedKB.push(Number(promoted[1]) / 1024);
    if (pause) pauseMs.push(Number(pause[1]));
  }
  return { scavenges: promotedKB.length, promotedKB, pauseMs };
}

function sumTicks(ticks: Map<string, number>, pick: (name: string) => boolean): number {
  let n = 0;
  for (const [name, t] of ticks) if (pick(name)) n += t;
  return n;
}

/**
 * Every thread of `pid` but the main one onto core 0: a `--cpu-prof` of the main thread then is not charged
 * with the time the store's writer and V8's helpers preempted it (round 6, bench/RESULTS.md).
 */
function mainAlone(pid: number): void {
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    if (tid !== String(pid)) spawnSync('taskset', ['-cp', '0', tid], { stdio: 'ignore' });
  }
}

export async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { runs: { type: 'string' }, seconds: { type: 'string' }, side: { type: 'string' }, dist: { type: 'string' }, 'main-alone': { type: 'boolean' } },
  });
  const runs = Number(values.runs ?? 6);
  const seconds = Number(values.seconds ?? 8);
  const dists = values.dist?.split(',') ?? [undefined];
  const bench = standaloneBench('switchboard-gc-regime-');
  const core = bench.pinned ? 1 : null;
  const sim = await startSimulator(bench.dir, bench.pinned ? 0 : null);
  const side = SIDES[values.side ?? 'json'];
  if (!side) throw new Error(`--side: one of ${Object.keys(SIDES).join(', ')}`);
  process.env.BENCH_NODE_FLAGS = `${process.env.BENCH_NODE_FLAGS ?? ''} --trace-gc-nvp`;
  for (let run = 0; run < runs; run++) {
    const dist = dists[run % dists.length];
    const cfg = writeBenchConfig({ upstreamUrl: sim.url, dir: bench.dir, name: `run${run}` });
    const proc = await startGateway(bench.dir, core, { name: `gateway-${run}`, config: cfg.file, db: cfg.dbPath, logLevel: 'info', ...(dist ? { dist } : {}) });
    if (values['main-alone'] && bench.pinned) mainAlone(proc.pid);
    const url = `${new URL(proc.url).origin}${cfg.chatPath.replace(/chat\/completions$/, side.path)}`;
    const headers = { authorization: `Bearer ${cfg.key}`, ...side.headers };
    const body = side.body;
    await runLoad({ url, connections: 50, seconds: 2, headers, body });
    const logFrom = readFileSync(proc.logFile, 'utf8').length;
    const before = threadTicks(proc.pid);
    const load = await runLoad({ url, connections: 50, seconds, headers, body });
    const after = threadTicks(proc.pid);
    const gc = scavengesIn(readFileSync(proc.logFile, 'utf8').slice(logFrom));
    await proc.stop();
    const per = (pick: (name: string) => boolean): string =>
      ((((sumTicks(after, pick) - sumTicks(before, pick)) / clkTck()) * 1e6) / Math.max(1, load.completed)).toFixed(1);
    const threads = [...after.keys()].map((name) => `${name} ${per((n) => n === name)}`).join(', ');
    log(
      `run ${run + 1} ${dist ?? 'this build'}: ${load.completed} req; us/req all ${per(() => true)} (${threads}); ` +
        `${gc.scavenges} scavenges, promoted median ${median(gc.promotedKB)?.toFixed(0) ?? '-'} KB, ` +
        `pause median ${median(gc.pauseMs)?.toFixed(1) ?? '-'} ms; non-2xx ${load.non2xx}, errors ${load.errors}`,
    );
  }
  await stopAll();
  log(`load ${bench.loadLine()}; pinned: ${bench.pinned}; logs in ${join(bench.dir)}`);
}

runIfEntryPoint(import.meta.url, 'gc-regime', main);
