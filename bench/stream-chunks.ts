/**
 * Per-chunk CPU of a streamed turn (issue 35): the gateway and the bare proxy each serve 20-chunk and
 * 200-chunk streams in alternating rounds; (CPU per 200-chunk stream - CPU per 20-chunk stream) / 180 is
 * the per-chunk cost, free of the per-request cost both lengths share. Each round runs the four
 * cells back to back (the order flips every round), so a busy minute on the shared machine moves a
 * round's cells together; the figures are medians over rounds.
 *
 *   node dist/bench/stream-chunks.js [--seconds 5] [--rounds 5] [--connections 50] [--delay-ms 0]
 *     [--log-level info] [--other-dist <dist dir of another build>]
 *
 * --delay-ms 0: the simulator writes a whole stream at once, so its chunks reach the proxy in one or two
 * reads; --delay-ms 1 spaces them, one read and one client write per chunk, as from a real model.
 * --log-level: the gateway's (info, as `serve` runs by default). --other-dist adds that build's gateway as a
 * third cell (same config and level), for a before/after in the same rounds.
 */
import { parseArgs } from 'node:util';
import { BENCH_MODEL } from './config.js';
import { startCpuMeter } from './cpu.js';
import { median } from './limiter-cost.js';
import { runLoad } from './load.js';
import { standaloneBench, runIfEntryPoint, startComparedSides, stopAll, type BenchSide } from './targets.js';

const SHORT = 20;
const LONG = 200;

interface Cell {
  readonly name: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly pid: number;
}

/** delay_ms > 0 spaces the chunks, so each arrives in its own upstream read as from a real model. */
function body(tokens: number, delayMs: number): string {
  const sim = delayMs > 0 ? { tokens, delay_ms: delayMs } : { tokens };
  return JSON.stringify({ model: BENCH_MODEL, messages: [{ role: 'user', content: 'Say hello to the benchmark.' }], stream: true, sim });
}

/** CPU microseconds per completed stream of `tokens` chunks. */
async function cpuPerStream(cell: Cell, tokens: number, connections: number, seconds: number, delayMs: number): Promise<number> {
  const meter = startCpuMeter(cell.pid);
  const load = await runLoad({ url: cell.url, connections, seconds, headers: { ...cell.headers, 'x-sim-tokens': String(tokens) }, body: body(tokens, delayMs) });
  if (load.non2xx > 0 || load.errors > 0) throw new Error(`${cell.name}: ${load.non2xx} non-2xx, ${load.errors} errors`);
  return meter.stop(load.completed) ?? Number.NaN;
}

export async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { seconds: { type: 'string' }, rounds: { type: 'string' }, connections: { type: 'string' }, 'delay-ms': { type: 'string' }, 'log-level': { type: 'string' }, 'other-dist': { type: 'string' } },
  });
  const logLevel = values['log-level'] ?? 'info';
  const delayMs = Number(values['delay-ms'] ?? 0);
  const seconds = Number(values.seconds ?? 5);
  const rounds = Number(values.rounds ?? 5);
  const connections = Number(values.connections ?? 50);
  const bench = standaloneBench('switchboard-stream-chunks-');
  const sides = await startComparedSides(bench, logLevel, values['other-dist']);
  const cell = (name: string, side: BenchSide): Cell => ({ name, url: side.chatUrl, headers: side.headers, pid: side.proc.pid });
  const cells: Cell[] = [cell('bare proxy', sides.bare), cell('gateway', sides.gateway)];
  if (sides.other) cells.push(cell('other build', sides.other));
  for (const c of cells) for (const n of [SHORT, LONG]) await cpuPerStream(c, n, connections, 1, delayMs); // warm-up
  const per: Record<string, { short: number[]; long: number[]; chunk: number[] }> = {};
  for (const c of cells) per[c.name] = { short: [], long: [], chunk: [] };
  for (let r = 0; r < rounds; r++) {
    const rotated = cells.map((_, j) => cells[(r + j) % cells.length] as Cell);
    const order = r % 2 === 0 ? rotated : rotated.reverse();
    for (const c of order) {
      const s = await cpuPerStream(c, SHORT, connections, seconds, delayMs);
      const l = await cpuPerStream(c, LONG, connections, seconds, delayMs);
      const p = per[c.name]!;
      p.short.push(s);
      p.long.push(l);
      p.chunk.push((l - s) / (LONG - SHORT));
      process.stdout.write(`round ${r + 1} ${c.name}: ${s.toFixed(1)} us/${SHORT}-chunk stream, ${l.toFixed(1)} us/${LONG}-chunk stream, ${((l - s) / (LONG - SHORT)).toFixed(2)} us/chunk\n`);
    }
  }
  const f = (v: number | null): string => (v === null ? '-' : v.toFixed(2));
  for (const c of cells) {
    const p = per[c.name]!;
    process.stdout.write(`${c.name} (median of ${rounds}): ${f(median(p.short))} us/${SHORT}-chunk stream, ${f(median(p.long))} us/${LONG}-chunk stream, ${f(median(p.chunk))} us/chunk\n`);
  }
  // Added cost per round (each round's cells ran back to back), then the median over rounds.
  const base = per['bare proxy']!;
  for (const c of cells.slice(1)) {
    const p = per[c.name]!;
    const added = (k: 'chunk'): string => f(median(p[k].map((v, i) => v - (base[k][i] ?? Number.NaN))));
    const ratio = f(median(p.short.map((v, i) => v / (base.short[i] ?? Number.NaN))));
    process.stdout.write(`${c.name} over the bare proxy (median of rounds): ${added('chunk')} us/chunk added; ${SHORT}-chunk stream ${ratio}x the CPU\n`);
  }
  process.stdout.write(`${connections} connections, ${seconds} s per cell, ${delayMs} ms between chunks, gateway at ${logLevel}; load ${bench.loadLine()}; pinned: ${bench.pinned}\n`);
  await stopAll();
}

runIfEntryPoint(import.meta.url, 'stream-chunks', main);
