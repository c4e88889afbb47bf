/**
 * Which garbage-collection regime a gateway settles into under load, and what a side costs against another,
 * run after run (issue 35). A fresh gateway per run (V8's heap and type feedback start over, and no side
 * pays for what another left behind), alone on core 1 with the simulator and this client on core 0,
 * `--trace-gc-nvp` on; per run: CPU per request by thread name, scavenges, bytes promoted per scavenge and
 * the scavenge pause, from the gateway's own GC trace. Round 7 (bench/RESULTS.md) found two regimes, same
 * build, run to run: ~50 KB promoted a scavenge, or ~5 MB with V8's helper threads' CPU tripled.
 *   npm run build && node dist/bench/gc-regime.js [--rounds 6] [--seconds 8] [--side json|stream|resp|resp-stored,...] [--dist <dist>,<dist>] [--main-alone]
 * Every round runs every build (--dist, default this one) with every side (--side, comma-separated), one
 * gateway each, in a rotating order; the summary gives each cell's median, its ratio to the first side of
 * the same build round by round, and how many of its runs were in the promoting regime.
 * --main-alone: the gateway's other threads moved to core 0 (with BENCH_PROFILE_DIR, a clean main-thread profile).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { threadTicks, threadUsPerRequest } from './cpu.js';
import { BENCH_MODEL, writeBenchConfig } from './config.js';
import { median } from './limiter-cost.js';
import { runLoad } from './load.js';
import { SMALL_BODY, STREAM_BODY, STREAM_HEADERS } from './scenarios.js';
import { runIfEntryPoint, standaloneBench, startGateway, startSimulator, stopAll, type StandaloneBench } from './targets.js';

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

/** The scavenges of a `--trace-gc-nvp` log: bytes promoted and the main thread's pause, each. */
function scavengesIn(text: string): GcTrace {
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

/**
 * Every thread of `pid` but the main one onto core 0: a `--cpu-prof` of the main thread then is not charged
 * with the time the store's writer and V8's helpers preempted it (round 6, bench/RESULTS.md).
 */
function mainAlone(pid: number): void {
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    if (tid !== String(pid)) spawnSync('taskset', ['-cp', '0', tid], { stdio: 'ignore' });
  }
}

interface Cell {
  readonly dist: string | undefined;
  readonly side: string;
}

interface Measured {
  readonly usPerReq: number;
  readonly mainUs: number;
  readonly promotedKB: number;
}

/** A run's gateway promoted more than this a scavenge (median): round 7's promoting regime (~5 MB against ~50 KB). */
const PROMOTING_KB = 1024;

/** One fresh gateway serving one side: warm-up, then `seconds` of load measured. */
async function runCell(bench: StandaloneBench, simUrl: string, cell: Cell, run: number, seconds: number, mainOnly: boolean): Promise<Measured> {
  const side = SIDES[cell.side];
  if (!side) throw new Error(`--side: one of ${Object.keys(SIDES).join(', ')}`);
  const cfg = writeBenchConfig({ upstreamUrl: simUrl, dir: bench.dir, name: `run${run}` });
  const proc = await startGateway(bench.dir, bench.pinned ? 1 : null, { name: `gateway-${run}`, config: cfg.file, db: cfg.dbPath, logLevel: 'info', ...(cell.dist ? { dist: cell.dist } : {}) });
  if (mainOnly && bench.pinned) mainAlone(proc.pid);
  const url = `${new URL(proc.url).origin}${cfg.chatPath.replace(/chat\/completions$/, side.path)}`;
  const headers = { authorization: `Bearer ${cfg.key}`, ...side.headers };
  await runLoad({ url, connections: 50, seconds: 2, headers, body: side.body });
  const logFrom = readFileSync(proc.logFile, 'utf8').length;
  const before = threadTicks(proc.pid);
  const load = await runLoad({ url, connections: 50, seconds, headers, body: side.body });
  const after = threadTicks(proc.pid);
  const gc = scavengesIn(readFileSync(proc.logFile, 'utf8').slice(logFrom));
  await proc.stop();
  const perThread = threadUsPerRequest(before, after, load.completed);
  const usPerReq = [...perThread.values()].reduce((sum, us) => sum + us, 0);
  const threads = [...perThread].map(([name, us]) => `${name} ${us.toFixed(1)}`).join(', ');
  const promotedKB = median(gc.promotedKB) ?? 0;
  log(
    `run ${run + 1} ${cell.dist ?? 'this build'} ${cell.side}: ${load.completed} req; us/req all ${usPerReq.toFixed(1)} (${threads}); ` +
      `${gc.scavenges} scavenges, promoted median ${promotedKB.toFixed(0)} KB, pause median ${median(gc.pauseMs)?.toFixed(1) ?? '-'} ms; ` +
      `non-2xx ${load.non2xx}, errors ${load.errors}`,
  );
  return { usPerReq, mainUs: perThread.get('main') ?? 0, promotedKB };
}

export async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { rounds: { type: 'string' }, seconds: { type: 'string' }, side: { type: 'string' }, dist: { type: 'string' }, 'main-alone': { type: 'boolean' } },
  });
  const rounds = Number(values.rounds ?? 6);
  const seconds = Number(values.seconds ?? 8);
  const dists = values.dist?.split(',') ?? [undefined];
  const sides = (values.side ?? 'json').split(',');
  const cells: Cell[] = dists.flatMap((dist) => sides.map((side) => ({ dist, side })));
  const bench = standaloneBench('switchboard-gc-regime-');
  const sim = await startSimulator(bench.dir, bench.pinned ? 0 : null);
  process.env.BENCH_NODE_FLAGS = `${process.env.BENCH_NODE_FLAGS ?? ''} --trace-gc-nvp`;
  const results = cells.map((): Measured[] => []);
  let run = 0;
  for (let r = 0; r < rounds; r++) {
    // Each cell goes first, in the middle and last about equally often: the machine's slow minutes fall on all.
    const order = cells.map((_, k) => (k + r) % cells.length);
    if (r % 2 === 1) order.reverse();
    for (const k of order) results[k]?.push(await runCell(bench, sim.url, cells[k] as Cell, run++, seconds, values['main-alone'] === true));
  }
  await stopAll();
  cells.forEach((cell, k) => {
    const own = results[k] ?? [];
    // Against the first side of the same build, round by round (the same minutes of the machine).
    const base = results[cells.findIndex((c) => c.dist === cell.dist)] ?? [];
    const ratios = own.map((m, i) => m.usPerReq / (base[i]?.usPerReq ?? Number.NaN));
    // Against the first build's same side, round by round: a before/after of one side.
    const first = results[cells.findIndex((c) => c.side === cell.side)] ?? [];
    const vsFirst = own.map((m, i) => m.usPerReq / (first[i]?.usPerReq ?? Number.NaN));
    log(
      `${cell.dist ?? 'this build'} ${cell.side}: us/req median ${median(own.map((m) => m.usPerReq))?.toFixed(1)} (main ${median(own.map((m) => m.mainUs))?.toFixed(1)}); ` +
        `vs ${sides[0]} median ${median(ratios)?.toFixed(2)}x (${ratios.map((x) => x.toFixed(2)).join(', ')}); ` +
        (dists.length > 1 ? `vs the first build median ${median(vsFirst)?.toFixed(2)}x (${vsFirst.map((x) => x.toFixed(2)).join(', ')}); ` : '') +
        `runs promoting > ${PROMOTING_KB} KB a scavenge: ${own.filter((m) => m.promotedKB > PROMOTING_KB).length} of ${own.length}`,
    );
  });
  log(`load ${bench.loadLine()}; pinned: ${bench.pinned}; logs in ${bench.dir}`);
}

runIfEntryPoint(import.meta.url, 'gc-regime', main);
