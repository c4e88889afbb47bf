/**
 * `serve --workers N` (issue 12): requests per second of non-streamed chat completions through the
 * gateway to the simulator, one gateway process with 1 worker (today's single thread) against one with 2
 * worker threads, both at the default info logs, in alternating rounds (ABBA, as bench/limiter-cost.ts) and reported
 * as the medians. Nothing is pinned: the 2-worker gateway needs every core, and the client (autocannon,
 * this process) and the simulator share them, as they would on a small host.
 *   npm run build && node dist/bench/workers.js
 * Env: BENCH_ROUNDS (default 5 per side), BENCH_ROUND_SECONDS (default 4), BENCH_CONNECTIONS (default 50).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeBenchConfig } from './config.js';
import { runLoad, type LoadResult } from './load.js';
import { SMALL_BODY } from './scenarios.js';
import { freePort, onExitSync, runIfEntryPoint, serveArgs, startProc, startSimulator, stopAll, type Proc } from './targets.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_ROUND_SECONDS ?? 4);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const distDir = new URL('..', import.meta.url).pathname;

async function startWorkersGateway(dir: string, workers: number, config: string, db: string): Promise<Proc> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  return startProc({
    name: `gateway-${workers}w`,
    args: serveArgs(distDir, ['--config', config, '--port', String(port), '--db', db, '--workers', String(workers)]),
    core: null,
    logDir: dir,
    env: { SWITCHBOARD_LOG_LEVEL: 'info' },
    // The launch's one listening line comes once every worker listens.
    ready: (text) => (text.includes('"msg":"switchboard listening"') ? url : null),
    timeoutMs: 30_000,
  });
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
};

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-workers-'));
  onExitSync(() => rmSync(dir, { recursive: true, force: true }));
  const loadBefore = (loadavg()[0] ?? 0).toFixed(2);
  const sim = await startSimulator(dir, null);
  const one = writeBenchConfig({ upstreamUrl: sim.url, dir, name: 'one' });
  const two = writeBenchConfig({ upstreamUrl: sim.url, dir, name: 'two' });
  const gateways = { 1: await startWorkersGateway(dir, 1, one.file, one.dbPath), 2: await startWorkersGateway(dir, 2, two.file, two.dbPath) };
  const keys = { 1: one, 2: two };
  const round = (workers: 1 | 2, seconds: number): Promise<LoadResult> =>
    runLoad({
      url: `${gateways[workers].url}${keys[workers].chatPath}`,
      connections: CONNECTIONS,
      seconds,
      headers: { authorization: `Bearer ${keys[workers].key}`, 'content-type': 'application/json' },
      body: SMALL_BODY,
    });
  await round(1, 2);
  await round(2, 2);
  const rps: Record<1 | 2, number[]> = { 1: [], 2: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const order: (1 | 2)[] = r % 2 === 0 ? [1, 2] : [2, 1];
    for (const workers of order) {
      const result = await round(workers, SECONDS);
      if (result.non2xx > 0 || result.errors > 0) throw new Error(`${workers} worker(s): ${result.non2xx} non-2xx, ${result.errors} errors`);
      rps[workers].push(result.reqPerSec);
      process.stderr.write(`round ${r + 1}: ${workers} worker(s) ${Math.round(result.reqPerSec)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms\n`);
    }
  }
  const [m1, m2] = [median(rps[1]), median(rps[2])];
  process.stdout.write(
    `serve --workers: non-streamed chat, ${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ${SECONDS} s per side, ${availableParallelism()} cores, load ${loadBefore} at start\n` +
      `  1 worker:  median ${Math.round(m1)} req/s (rounds ${rps[1].map(Math.round).join(', ')})\n` +
      `  2 workers: median ${Math.round(m2)} req/s (rounds ${rps[2].map(Math.round).join(', ')})\n` +
      `  ratio ${(m2 / m1).toFixed(2)}x\n`,
  );
  await stopAll();
}

runIfEntryPoint(import.meta.url, 'workers', main);
