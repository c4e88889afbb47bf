/**
 * The Redis limiter's cost per request (issue 12: "CPU per request with the Redis limiter against the
 * in-process one, ABBA rounds"). Two gateway processes on the same build and the same config, every limit
 * metered (project requests and tokens per minute, and a key quota) at ceilings no run reaches; one counts
 * in this process (the embedded default), the other in Redis (`coordination.redis_url`: one EVALSHA round
 * trip per admission). Non-streamed chat, 50 connections, alternating rounds (in-process first on odd
 * rounds, Redis first on even ones); reported: the medians of req/s, of the gateway's own CPU per request
 * (utime+stime of its process, pool threads included), and of p50/p99 latency. Redis's own CPU is shown
 * beside it, since with Redis some of the counting moves to another process.
 *   npm run build && node dist/bench/redis-limiter.js
 * Env: REDIS_URL (default redis://127.0.0.1:6379), BENCH_ROUNDS (default 6), BENCH_ROUND_SECONDS (default 4),
 * BENCH_CONNECTIONS (default 50).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeBenchConfig, type BenchConfig } from './config.js';
import { startCpuMeter } from './cpu.js';
import { median } from './limiter-cost.js';
import { runLoad } from './load.js';
import { SMALL_BODY } from './scenarios.js';
import { onExitSync, runIfEntryPoint, startGateway, startSimulator, stopAll, type Proc } from './targets.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const SECONDS = Number(process.env.BENCH_ROUND_SECONDS ?? 4);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const LIMITS = { requestsPerMinute: 100_000_000, tokensPerMinute: 1_000_000_000, quotaRequests: 100_000_000 };

type Side = 'in-process' | 'redis';

interface Sample {
  readonly reqPerSec: number;
  readonly cpuUsPerReq: number | null;
  readonly redisCpuUsPerReq: number | null;
  readonly p50: number | null;
  readonly p99: number | null;
}

/** The pid of the redis-server answering REDIS_URL's port (null: not local, its CPU is not shown). */
function redisPid(): number | null {
  try {
    const port = new URL(REDIS_URL).port || '6379';
    const out = execFileSync('redis-cli', ['-p', port, 'info', 'server'], { encoding: 'utf8' });
    const m = /^process_id:(\d+)/m.exec(out);
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

async function round(gateway: Proc, config: BenchConfig, seconds: number, redis: number | null): Promise<Sample> {
  const cpu = startCpuMeter(gateway.pid);
  const redisCpu = redis === null ? null : startCpuMeter(redis);
  const load = await runLoad({
    url: `${gateway.url}${config.chatPath}`,
    connections: CONNECTIONS,
    seconds,
    headers: { authorization: `Bearer ${config.key}`, 'content-type': 'application/json' },
    body: SMALL_BODY,
  });
  if (load.non2xx > 0 || load.errors > 0) throw new Error(`${load.non2xx} non-2xx, ${load.errors} errors: a limit was reached or the gateway failed`);
  return { reqPerSec: load.reqPerSec, cpuUsPerReq: cpu.stop(load.completed), redisCpuUsPerReq: redisCpu?.stop(load.completed) ?? null, p50: load.p50, p99: load.p99 };
}

const fmt = (v: number | null, digits = 0): string => (v === null ? 'n/a' : v.toFixed(digits));

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-redis-limiter-'));
  onExitSync(() => rmSync(dir, { recursive: true, force: true }));
  const loadBefore = (loadavg()[0] ?? 0).toFixed(2);
  const sim = await startSimulator(dir, null);
  const configs: Record<Side, BenchConfig> = {
    'in-process': writeBenchConfig({ upstreamUrl: sim.url, dir, name: 'in-process', ...LIMITS }),
    redis: writeBenchConfig({ upstreamUrl: sim.url, dir, name: 'redis', ...LIMITS, redisUrl: REDIS_URL }),
  };
  const gateways: Record<Side, Proc> = {
    'in-process': await startGateway(dir, null, { name: 'gateway-in-process', config: configs['in-process'].file, db: configs['in-process'].dbPath, logLevel: 'info' }),
    redis: await startGateway(dir, null, { name: 'gateway-redis', config: configs.redis.file, db: configs.redis.dbPath, logLevel: 'info' }),
  };
  const redis = redisPid();
  // Warm-up: JIT, connection pools, Redis script cache.
  for (const side of ['in-process', 'redis'] as const) await round(gateways[side], configs[side], 2, null);
  const samples: Record<Side, Sample[]> = { 'in-process': [], redis: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const order: Side[] = r % 2 === 0 ? ['in-process', 'redis'] : ['redis', 'in-process'];
    for (const side of order) {
      const s = await round(gateways[side], configs[side], SECONDS, side === 'redis' ? redis : null);
      samples[side].push(s);
      process.stderr.write(`round ${r + 1}: ${side} ${Math.round(s.reqPerSec)} req/s, ${fmt(s.cpuUsPerReq)} us CPU/req, p50 ${s.p50} ms, p99 ${s.p99} ms\n`);
    }
  }
  const med = (side: Side, pick: (s: Sample) => number | null): number | null => median(samples[side].flatMap((s) => (pick(s) === null ? [] : [pick(s) as number])));
  const cpuRatios = samples['in-process'].flatMap((a, i) => {
    const b = samples.redis[i];
    return a.cpuUsPerReq && b?.cpuUsPerReq ? [b.cpuUsPerReq / a.cpuUsPerReq] : [];
  });
  const line = (side: Side): string =>
    `| ${side} | ${fmt(med(side, (s) => s.reqPerSec))} | ${fmt(med(side, (s) => s.cpuUsPerReq))} | ${side === 'redis' ? fmt(med(side, (s) => s.redisCpuUsPerReq)) : '-'} | ${fmt(med(side, (s) => s.p50), 1)} | ${fmt(med(side, (s) => s.p99), 1)} |`;
  process.stdout.write(
    `Redis limiter vs in-process: non-streamed chat, every limit metered, info logs, ${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ${SECONDS} s per side, ${availableParallelism()} cores, load ${loadBefore} at start\n\n` +
      `| limiter | req/s | gateway CPU us/req | redis-server CPU us/req | p50 ms | p99 ms |\n|---|---|---|---|---|---|\n${line('in-process')}\n${line('redis')}\n\n` +
      `gateway CPU per request, Redis / in-process: median of the rounds' ratios ${fmt(median(cpuRatios), 2)}x (rounds ${cpuRatios.map((r) => r.toFixed(2)).join(', ')})\n`,
  );
  await stopAll();
}

runIfEntryPoint(import.meta.url, 'redis-limiter', main);
