/**
 * The semantic router's benchmark, written into the `routing` section of bench/RESULTS.md:
 *   1. the decision without the embedding call at 50 endpoints x 200 examples (bench/routing-decision.ts),
 *      and the HNSW recall@1 against exact search on the same vectors;
 *   2. end to end, in one run: the router route against the direct route of the same gateway, same body,
 *      50 connections, non-streaming, in alternating rounds (direct then routed, then routed then direct,
 *      ...): on this shared machine a busy minute moves both halves of a round, so the figure quoted is the
 *      median of the rounds' routed/direct gateway CPU per request (issue 17: at most 2x).
 *   npm run build && node dist/bench/routing.js
 *   (BENCH_SECONDS per run, default 8; BENCH_ROUNDS, default 5; BENCH_QUICK=1: 3 s, 3 rounds)
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { parseConfig } from '../src/config.js';
import { startCpuMeter } from './cpu.js';
import { median } from './limiter-cost.js';
import { runLoad, type LoadResult } from './load.js';
import { runDecisionBench, type DecisionBench } from './routing-decision.js';
import { hasTaskset, onExitSync, pinSelf, startGateway, startSimulator, stopAll } from './targets.js';
import { writeResultsSection } from './sections.js';

const quick = process.env.BENCH_QUICK === '1';
const seconds = Number(process.env.BENCH_SECONDS ?? (quick ? 3 : 8));
const rounds = Number(process.env.BENCH_ROUNDS ?? (quick ? 3 : 5));
/** Issue 17: a routed turn costs at most this many direct turns' gateway CPU. */
const MAX_CPU_RATIO = 2;
/** Issue 17: the decision's p99 within this of the empty round trip's p99 measured in the same run. */
const MAX_DECISION_OVER_HOP_MS = 0.5;
const log = (msg: string): void => void process.stderr.write(`bench routing: ${msg}\n`);

const PROFILES: Record<string, { description: string; examples: string[] }> = {
  chat: { description: 'Casual conversation, greetings and small talk', examples: ['hello there', 'say hello to the team', 'how are you today'] },
  math: { description: 'Mathematics: algebra, calculus and equations', examples: ['solve 2x + 3 = 7', 'integral of x squared', 'derivative of sin x'] },
  code: { description: 'Programming: code review, bugs and refactoring', examples: ['fix this typescript bug', 'refactor the function', 'write a unit test'] },
  travel: { description: 'Travel plans, hotels and flights', examples: ['plan a trip to lisbon', 'cheap flights to rome', 'hotel near the station'] },
};

function writeConfig(dir: string, upstream: string): { file: string; db: string; key: string } {
  const key = `svc_bench_${randomBytes(32).toString('base64url')}`;
  const endpoint = (slug: string) => ({
    id: randomUUID(),
    slug,
    name: slug,
    kind: 'chat',
    tier: 'gpu',
    model: { id: `bench-${slug}`, context_window: 32768, capabilities: ['tools'] },
    upstream: { base_url: upstream, model: 'sim-chat' },
    router: PROFILES[slug],
  });
  const raw = {
    server: { host: '127.0.0.1', port: 0 },
    storage: { path: join(dir, 'routing.db') },
    security: { allow_private_targets: true, allow_http_targets: true },
    projects: [
      {
        id: 'proj_bench',
        slug: 'bench',
        rate_limit: { requests_per_minute: 0, tokens_per_minute: 0 },
        default_workspace: 'ws_0a1b2c',
        workspaces: [{ id: 'ws_0a1b2c', name: 'Bench' }],
        endpoints: [
          ...Object.keys(PROFILES).map(endpoint),
          { id: randomUUID(), slug: 'embed', name: 'embed', kind: 'embedding', tier: 'cpu', model: { id: 'sim-embed', context_window: 8192 }, upstream: { base_url: upstream, model: 'sim-embed' } },
        ],
        keys: [{ value: key, scopes: ['inference'] }],
      },
    ],
  };
  parseConfig(raw, 'routing bench config');
  const file = join(dir, 'routing.yaml');
  writeFileSync(file, stringify(raw), { mode: 0o600 });
  return { file, db: join(dir, 'routing.db'), key };
}

interface E2eRow {
  readonly label: string;
  /** One run per round, in round order. */
  readonly runs: { readonly load: LoadResult; readonly cpuUs: number | null }[];
}

const fmt = (n: number | null, digits = 2): string => (n === null ? '-' : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }));
const med = (xs: readonly (number | null)[]): number | null => median(xs.filter((x): x is number => x !== null));

/** Each round's routed / direct gateway CPU per request. */
function cpuRatios(direct: E2eRow, routed: E2eRow): number[] {
  return direct.runs.flatMap((d, i) => {
    const r = routed.runs[i]?.cpuUs ?? null;
    return d.cpuUs && r !== null ? [r / d.cpuUs] : [];
  });
}

function render(d: DecisionBench, direct: E2eRow, routed: E2eRow, pinning: string, load: string): string {
  const ratios = cpuRatios(direct, routed);
  const ratio = median(ratios);
  const throughput = (med(routed.runs.map((r) => r.load.reqPerSec)) ?? 0) / (med(direct.runs.map((r) => r.load.reqPerSec)) ?? 1);
  const overHop = d.p99Ms - d.hopP99Ms;
  const row = (r: E2eRow): string =>
    `| ${r.label} | ${fmt(med(r.runs.map((x) => x.load.reqPerSec)), 0)} | ${fmt(med(r.runs.map((x) => x.load.p50)))} | ${fmt(med(r.runs.map((x) => x.load.p99)))} | ${r.runs.reduce((n, x) => n + x.load.non2xx, 0)} | ${fmt(med(r.runs.map((x) => x.cpuUs)), 0)} | ${r.runs.map((x) => fmt(x.cpuUs, 0)).join(' / ')} |`;
  return [
    '## Semantic router',
    '',
    `Decision without the embedding call, ${d.endpoints} generative endpoints x ${d.examples} examples (${d.vectors.toLocaleString('en-US')} vectors, ${d.dimensions} dimensions, HNSW M=16, ef_construction=200, ef_search=64, k=32): planRoute, the search on the similarity thread (one sequential round trip each), finishRoute; every other turn has an incumbent scored exactly. The empty round trip is measured in the same run, on the same thread.`,
    '',
    '| decisions | p50 ms | p99 ms | p99.9 ms | mean ms | over 1 ms | empty round trip p50 / p99 ms | decision p99 - empty p99 ms | search in thread p50 / p99 ms | pure decision p99 us | index build + load ms |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    `| ${d.decisions} | ${fmt(d.p50Ms, 3)} | ${fmt(d.p99Ms, 3)} | ${fmt(d.p999Ms, 3)} | ${fmt(d.meanMs, 3)} | ${fmt(d.over1Ms * 100, 1)}% | ${fmt(d.hopP50Ms, 3)} / ${fmt(d.hopP99Ms, 3)} | ${fmt(overHop, 3)} | ${fmt(d.searchP50Ms, 3)} / ${fmt(d.searchP99Ms, 3)} | ${fmt(d.pureP99Us, 1)} | ${fmt(d.buildMs, 0)} |`,
    '',
    `- target: decision p99 within ${MAX_DECISION_OVER_HOP_MS} ms of the empty round trip's p99: **${overHop <= MAX_DECISION_OVER_HOP_MS ? 'met' : 'not met'}** (${fmt(d.p99Ms, 3)} ms against ${fmt(d.hopP99Ms, 3)} ms: ${fmt(overHop, 3)} ms apart). The work itself: search p99 ${fmt(d.searchP99Ms, 3)} ms in the thread, pure decision p99 ${fmt(d.pureP99Us / 1000, 3)} ms. Of ${d.slow.total} round trips over 1 ms in a timed copy of the same ${d.decisions} searches, ${d.slow.lateReturn} lost their time between the thread's answer and the main thread resuming, ${d.slow.lateStart} before the thread started, ${d.slow.longCompute} in the search: a thread that sleeps through a search sometimes wakes milliseconds late on this 2-vCPU virtual machine.`,
    `- HNSW recall@1 against exact search on the same vectors (${d.recallQueries} queries): **${fmt(d.recallAt1, 4)}** (target 0.99: ${d.recallAt1 >= 0.99 ? 'met' : 'not met'})`,
    `- winning endpoint from the worker's per-endpoint scores equals the exact winner: ${fmt(d.endpointAgreement, 4)}`,
    '',
    `End to end, same gateway, same body, 50 connections, non-streaming (4 profiled endpoints + the simulator's embedding endpoint), ${rounds} alternating rounds of ${seconds} s per route; medians over the rounds:`,
    '',
    '| route | req/s | p50 ms | p99 ms | non-2xx | gateway CPU/req us | per round us |',
    '|---|---:|---:|---:|---:|---:|---:|',
    row(direct),
    row(routed),
    '',
    `- routed / direct gateway CPU per request (median of the rounds' ratios, ${ratios.map((r) => fmt(r, 2)).join(', ')}): **${ratio === null ? '-' : fmt(ratio, 2)}x**; target at most ${MAX_CPU_RATIO}x: **${ratio !== null && ratio <= MAX_CPU_RATIO ? 'met' : 'not met'}**. Throughput routed / direct: ${fmt(throughput, 2)}x. A routed turn makes two upstream calls (the query embedding, then the chat turn), the similarity search (indexes up to 16,384 floats, like these four profiles, scanned exactly on the main thread, where the scan costs less than the hop; larger ones on the similarity thread through hnswlib, searches batched per event-loop turn) and a decision row (msgpack to the store's writer thread, sealed and inserted there); the CPU counts every thread of the gateway.`,
    `- pinning: decision bench unpinned (its similarity thread needs a core of its own); end to end: ${pinning}; 1-minute load average ${load}; run ${new Date().toISOString()}, \`node dist/bench/routing.js\``,
  ].join('\n');
}

async function main(): Promise<void> {
  const cores = availableParallelism();
  const loadBefore = (loadavg()[0] ?? 0).toFixed(2);
  // Unpinned: pinning this process would put the similarity thread on the main thread's core, and every
  // round trip would wait for a context switch (worker threads inherit the process's CPU affinity).
  log('decision bench (50 x 200)');
  const decision = await runDecisionBench({ queries: quick ? 1000 : 2000 });
  log(`decision p99 ${decision.p99Ms.toFixed(3)} ms, recall@1 ${decision.recallAt1}`);
  const pinned = hasTaskset() && cores >= 2 && pinSelf(0);

  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-routing-e2e-'));
  onExitSync(() => rmSync(dir, { recursive: true, force: true }));
  try {
    const sim = await startSimulator(dir, pinned ? 0 : null);
    const cfg = writeConfig(dir, sim.url);
    const gw = await startGateway(dir, pinned ? 1 : null, { name: 'gateway-routing', config: cfg.file, db: cfg.db, logLevel: 'warn' });
    const headers = { authorization: `Bearer ${cfg.key}` };
    const body = JSON.stringify({ model: 'bench-chat', messages: [{ role: 'user', content: 'Say hello to the benchmark.' }] });
    const origin = new URL(gw.url).origin;
    const targets = [
      { label: 'direct route (/proj_bench/chat/...)', url: `${origin}/proj_bench/chat/v1/chat/completions` },
      { label: 'router route (/proj_bench/_semantic/router/...)', url: `${origin}/proj_bench/_semantic/router/v1/chat/completions` },
    ];
    for (const t of targets) await runLoad({ url: t.url, connections: 50, seconds: Math.min(2, seconds), headers, body });
    const rows: E2eRow[] = targets.map((t) => ({ label: t.label, runs: [] }));
    for (let round = 0; round < rounds; round += 1) {
      // Alternating order: neither route always runs first in a round.
      for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) {
        const t = targets[i] as (typeof targets)[number];
        const meter = startCpuMeter(gw.pid);
        const load = await runLoad({ url: t.url, connections: 50, seconds, headers, body });
        rows[i]?.runs.push({ load, cpuUs: meter.stop(load.completed) });
      }
      const [d, r] = rows.map((row) => row.runs[round]?.cpuUs ?? null);
      log(`round ${round + 1}: direct ${fmt(d ?? null, 1)} us, routed ${fmt(r ?? null, 1)} us CPU per request`);
    }
    const load = `${loadBefore} at start, ${(loadavg()[0] ?? 0).toFixed(2)} at end (${cores} cores)`;
    const section = render(decision, rows[0] as E2eRow, rows[1] as E2eRow, pinned ? 'bench process and simulator on core 0, gateway on core 1' : 'none', load);
    process.stdout.write(`${section}\n`);
    writeResultsSection('routing', section);
  } finally {
    await stopAll();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
