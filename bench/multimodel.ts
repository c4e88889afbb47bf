/**
 * The multimodel route's bench (issue 16), written into the `multimodel` section of bench/RESULTS.md: the
 * gateway's own CPU for one decomposed turn against the sum of its dispatches served as separate routed
 * turns. One gateway (pinned to core 1) and the simulator (core 0, with this process) in one run, in
 * alternating blocks:
 *   a. a multimodel turn whose plan has 3 sub-tasks (`[plan: steps=3]`): one planner call, 3 routed step
 *      dispatches and 1 routed synthesis (4 query embeddings, 4 decision rows, 4 usage rows);
 *   b. 4 single-model routed turns (POST .../_semantic/router/v1/chat/completions), one after the other:
 *      the same 4 dispatches with no planning, scheduling or merging.
 * Overhead per turn = CPU(a) - CPU(b); per sub-task = that / 3. Requests are sequential (one in flight),
 * so the figures are CPU per turn, not throughput.
 *   npm run build && node dist/bench/multimodel.js     (BENCH_QUICK=1: fewer turns)
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import { stringify } from 'yaml';
import { parseConfig } from '../src/config.js';
import { startCpuMeter } from './cpu.js';
import { writeResultsSection } from './sections.js';
import { runIfEntryPoint, standaloneBench, startGateway, startSimulator, stopAll } from './targets.js';

const quick = process.env.BENCH_QUICK === '1';
const TURNS = Number(process.env.BENCH_MULTIMODEL_N ?? (quick ? 40 : 120));
/** Many short alternating rounds: on a shared machine the load moves between rounds, so rounds are paired. */
const ROUNDS = quick ? 4 : 8;
const WARMUP = 40;
const SUBTASKS = 3;
const DISPATCHES = SUBTASKS + 1;
const PROJECT = 'proj_bench';
const WS = 'ws_0a1b2c';
const log = (msg: string): void => void process.stderr.write(`bench multimodel: ${msg}\n`);

function writeConfig(dir: string, upstream: string): { file: string; db: string; key: string } {
  const key = `svc_bench_${randomBytes(32).toString('base64url')}`;
  const chat = (n: number, slug: string, description: string, capabilities: string[]) => ({
    id: `b0000000-0000-4000-8000-00000000000${n}`,
    slug,
    name: slug,
    kind: 'chat',
    tier: 'gpu',
    workspaces: [WS],
    model: { id: `model-${slug}`, context_window: 32768, capabilities },
    upstream: { base_url: upstream, model: 'sim-chat' },
    router: { description, examples: [] },
  });
  const raw = {
    server: { host: '127.0.0.1', port: 0 },
    storage: { path: join(dir, 'multimodel.db') },
    projects: [
      {
        id: PROJECT,
        slug: 'bench',
        rate_limit: { requests_per_minute: 0, tokens_per_minute: 0 },
        default_workspace: WS,
        workspaces: [{ id: WS, name: 'Bench' }],
        endpoints: [
          chat(1, 'math', 'Mathematics: algebra, calculus, derivatives and equations', ['tools']),
          chat(2, 'chat', 'Casual conversation: recipes, cooking and travel plans', ['tools', 'structured_output']),
          { id: 'b0000000-0000-4000-8000-000000000009', slug: 'embed', name: 'embed', kind: 'embedding', tier: 'cpu', model: { id: 'sim-embed', context_window: 8192 }, upstream: { base_url: upstream, model: 'sim-embed' } },
        ],
        keys: [{ value: key, scopes: ['inference'] }],
      },
    ],
  };
  parseConfig(raw, 'multimodel bench config');
  const file = join(dir, 'multimodel.yaml');
  writeFileSync(file, stringify(raw), { mode: 0o600 });
  return { file, db: join(dir, 'multimodel.db'), key };
}

const QUESTION = 'compute the derivative of sin x. recommend a recipe for dinner. plan a weekend trip to lisbon.';

async function post(url: string, key: string, body: object): Promise<void> {
  const res = await request(url, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${text.slice(0, 300)}`);
}

interface Block {
  readonly cpuUs: number;
  readonly wallMs: number[];
}

async function block(pid: number, turns: number, turn: () => Promise<void>): Promise<Block> {
  const meter = startCpuMeter(pid);
  const wallMs: number[] = [];
  for (let i = 0; i < turns; i += 1) {
    const t0 = performance.now();
    await turn();
    wallMs.push(performance.now() - t0);
  }
  return { cpuUs: meter.stop(turns) ?? Number.NaN, wallMs };
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};
const fmt = (x: number, digits = 0): string => x.toFixed(digits);

async function main(): Promise<void> {
  const { pinned, dir, loadLine } = standaloneBench('switchboard-bench-multimodel-');
  const sim = await startSimulator(dir, pinned ? 0 : null);
  const cfg = writeConfig(dir, sim.url);
  const gw = await startGateway(dir, pinned ? 1 : null, { name: 'gateway-multimodel', config: cfg.file, db: cfg.db, logLevel: 'warn' });
  try {
    const base = `${gw.url}/${PROJECT}/_semantic/router/v1/chat/completions`;
    const multimodel = (): Promise<void> => post(`${base}/multimodel`, cfg.key, { model: 'm', messages: [{ role: 'user', content: `${QUESTION} [plan: steps=${SUBTASKS}]` }] });
    const sentences = QUESTION.split(/(?<=\.)\s+/);
    const separate = async (): Promise<void> => {
      for (let i = 0; i < DISPATCHES; i += 1) await post(base, cfg.key, { model: 'm', messages: [{ role: 'user', content: sentences[i % sentences.length] as string }] });
    };
    log(`warm-up (${WARMUP} turns each)`);
    await block(gw.pid, WARMUP, multimodel);
    await block(gw.pid, WARMUP, separate);
    const mm: Block[] = [];
    const sep: Block[] = [];
    for (let r = 0; r < ROUNDS; r += 1) {
      log(`round ${r + 1}/${ROUNDS}: ${TURNS} multimodel turns, ${TURNS} x ${DISPATCHES} routed turns`);
      mm.push(await block(gw.pid, TURNS, multimodel));
      sep.push(await block(gw.pid, TURNS, separate));
    }
    const mmCpu = median(mm.map((b) => b.cpuUs));
    const sepCpu = median(sep.map((b) => b.cpuUs));
    // Paired by round (a block of each, back to back, under the same load): the median of the differences.
    const overhead = median(mm.map((b, i) => b.cpuUs - (sep[i]?.cpuUs ?? Number.NaN)));
    const section = [
      '## Multimodel route: turn overhead over the sum of its dispatches',
      '',
      `A plan of ${SUBTASKS} sub-tasks: one planner call, ${SUBTASKS} step dispatches and 1 synthesis (${DISPATCHES} routed dispatches, each with its query embedding, decision row and usage row), against the same ${DISPATCHES} dispatches as separate single-model routed turns. Sequential, ${TURNS} turns per block, ${ROUNDS} alternating rounds; CPU columns are medians of the rounds, the overhead is the median of the per-round differences; gateway CPU from /proc (utime + stime, all threads).`,
      '',
      '| | gateway CPU per turn (µs) | wall p50 per turn (ms) |',
      '|---|---:|---:|',
      `| multimodel turn (planner + ${DISPATCHES} dispatches) | ${fmt(mmCpu)} | ${fmt(median(mm.flatMap((b) => b.wallMs)), 2)} |`,
      `| ${DISPATCHES} routed turns, one after the other | ${fmt(sepCpu)} | ${fmt(median(sep.flatMap((b) => b.wallMs)), 2)} |`,
      `| overhead of the multimodel turn (paired) | ${fmt(overhead)} (${fmt((overhead / sepCpu) * 100, 1)} % of the separate turns) | |`,
      `| overhead per sub-task | ${fmt(overhead / SUBTASKS)} | |`,
      `| multimodel gateway CPU per sub-task (all of it / ${SUBTASKS}) | ${fmt(mmCpu / SUBTASKS)} | |`,
      '',
      `- per round (µs per turn, multimodel / separate): ${mm.map((b, i) => `${fmt(b.cpuUs)} / ${fmt(sep[i]?.cpuUs ?? Number.NaN)}`).join(', ')}`,
      `- reading: the multimodel turn adds a planner exchange (one more upstream call, its JSON parse and zod validation), the scheduler and the answer assembly, and saves what ${DISPATCHES - 1} of the ${DISPATCHES} client requests cost on their own (HTTP parse, authentication, limiter, response writing, access log); ${overhead < 0 ? `here the saving is larger than the added work in ${mm.filter((b, i) => b.cpuUs < (sep[i]?.cpuUs ?? 0)).length} of ${ROUNDS} rounds, so the turn costs less gateway CPU than its dispatches made as separate turns` : 'here the added work is larger than the saving'}. The wall time of a multimodel turn includes the planner round trip and runs the independent steps in parallel. The machine is shared (2 cores, 6 engineers, load average far above the core count during the run): CPU per turn drifts between rounds, which is why rounds are paired; read the figures as an order of magnitude.`,
      `- pinning: ${pinned ? 'simulator and bench process on core 0, gateway on core 1 (taskset -c)' : 'none'}; 1-minute load average ${loadLine()}; run ${new Date().toISOString()}, \`npm run build && node dist/bench/multimodel.js\`${quick ? ' (BENCH_QUICK=1)' : ''}`,
    ].join('\n');
    process.stdout.write(`${section}\n`);
    writeResultsSection('multimodel', section);
  } finally {
    await stopAll();
  }
}

runIfEntryPoint(import.meta.url, 'multimodel', main);
