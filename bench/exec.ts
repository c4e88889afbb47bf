/**
 * The execution surface's bench (issue 13), written into the `exec` section of bench/RESULTS.md. A
 * gateway and a simulator run as real processes (the simulator is an idle chat endpoint's upstream: exec
 * traffic never calls a model), the gateway pinned to core 1, this process (client and agents) to core 0.
 *   1. Round trip, sequential: POST /v1/exec/invocations, then GET its events stream until the terminal
 *      status frame (the moment a caller learns the invocation completed), against an in-process scripted
 *      agent (a `ws` client speaking docs/exec.md's protocol) that answers each `invocation.dispatch` at
 *      once with exit 0. The floor, in alternating blocks of the same run: a plain `ws` echo round trip
 *      and the same two HTTP requests (POST + GET) to a plain Node process on the gateway's core
 *      (bench/exec-echo.ts). Then once with the real reference agent (`switchboard agent`, a child
 *      process) running `true`: spawn cost included.
 *   2. 1,000 invocations launched at once over 10 scripted agents, each followed on its events stream:
 *      every one must end `completed`, dispatched and answered exactly once (counted per invocation id at
 *      the agents), and read back `completed` from the gateway afterwards.
 *   npm run build && node dist/bench/exec.js     (BENCH_QUICK=1: 100 sequential, 200 concurrent)
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import WebSocket from 'ws';
import { stringify } from 'yaml';
import { parseConfig } from '../src/config.js';
import { BENCH_MODEL } from './config.js';
import { clkTck, cpuTicks } from './cpu.js';
import { writeResultsSection } from './sections.js';
import { type Proc, runIfEntryPoint, standaloneBench, startGateway, startProc, stopAll } from './targets.js';

const quick = process.env.BENCH_QUICK === '1';
const SEQ_N = Number(process.env.BENCH_EXEC_N ?? (quick ? 100 : 500));
const ROUNDS = 5;
const WARMUP = 50;
const REF_N = quick ? 30 : 100;
const CONCURRENT = Number(process.env.BENCH_EXEC_CONCURRENT ?? (quick ? 200 : 1000));
const AGENTS = 10;
const PROJECT = 'proj_bench';
const WS_DEFAULT = 'ws_0a1b2c';
const WS_OPS = 'ws_0e0e0e';
const log = (msg: string): void => void process.stderr.write(`bench exec: ${msg}\n`);
const distDir = new URL('..', import.meta.url).pathname;

// ---- processes and config ----

function writeConfig(dir: string, upstream: string): { file: string; db: string; key: string } {
  const key = `svc_bench_${randomBytes(32).toString('base64url')}`;
  const raw = {
    server: { host: '127.0.0.1', port: 0 },
    storage: { path: join(dir, 'exec.db') },
    security: { allow_private_targets: true, allow_http_targets: true },
    exec: { lease_ms: 30_000 },
    projects: [
      {
        id: PROJECT,
        slug: 'bench',
        rate_limit: { requests_per_minute: 0, tokens_per_minute: 0 },
        default_workspace: WS_DEFAULT,
        workspaces: [
          { id: WS_DEFAULT, name: 'Bench' },
          { id: WS_OPS, name: 'Ops', operational: true },
        ],
        endpoints: [
          {
            id: randomUUID(),
            slug: 'chat',
            name: 'chat',
            kind: 'chat',
            tier: 'gpu',
            model: { id: BENCH_MODEL, context_window: 32768 },
            upstream: { base_url: upstream, model: 'sim-chat' },
          },
        ],
        keys: [{ value: key, scopes: ['execution', 'management'] }],
      },
    ],
  };
  parseConfig(raw, 'exec bench config');
  const file = join(dir, 'exec.yaml');
  writeFileSync(file, stringify(raw), { mode: 0o600 });
  return { file, db: join(dir, 'exec.db'), key };
}

const startSim = (dir: string, core: number | null): Promise<Proc> =>
  startProc({ name: 'simulator', args: [join(distDir, 'src/cli.js'), 'simulate', '--port', '0'], core, logDir: dir, ready: (t) => /simulator listening on (\S+)/.exec(t)?.[1] ?? null });

const startEcho = (dir: string, core: number | null): Promise<Proc> =>
  startProc({ name: 'exec-echo', args: [join(distDir, 'bench/exec-echo.js'), '--port', '0'], core, logDir: dir, ready: (t) => /exec echo listening on (\S+)/.exec(t)?.[1] ?? null });

// ---- the scripted agent ----

/** Per invocation id: how many dispatches this agent received and results it sent. */
interface ScriptedAgent {
  readonly name: string;
  readonly agentId: string;
  readonly extensions: string;
  readonly dispatched: Map<string, number>;
  readonly answered: Map<string, number>;
  close(): Promise<void>;
}

/** When each dispatch reached an agent of this process (performance.now()), by invocation id. */
const dispatchSeenAt = new Map<string, number>();

function connectScripted(wsUrl: string, joinKey: string, name: string, tool: string): Promise<ScriptedAgent> {
  const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${joinKey}` } });
  const dispatched = new Map<string, number>();
  const answered = new Map<string, number>();
  return new Promise((resolve, reject) => {
    ws.on('error', reject);
    ws.on('unexpected-response', (_req, res) => reject(new Error(`agent upgrade refused: ${res.statusCode}`)));
    ws.on('open', () =>
      ws.send(JSON.stringify({ type: 'enroll', registration_name: name, manifest: { tools: [{ name: tool, description: 'does nothing', input_schema: { type: 'object' }, risk: 'read' }] } })),
    );
    ws.on('message', (raw) => {
      const m = JSON.parse(String(raw)) as { type: string; invocation_id?: string; agent_id?: string; code?: string; message?: string };
      if (m.type === 'invocation.dispatch' && m.invocation_id) {
        const id = m.invocation_id;
        dispatchSeenAt.set(id, performance.now());
        dispatched.set(id, (dispatched.get(id) ?? 0) + 1);
        ws.send(JSON.stringify({ type: 'invocation.result', invocation_id: id, exit_code: 0 }));
        answered.set(id, (answered.get(id) ?? 0) + 1);
      } else if (m.type === 'enrolled') {
        const beat = setInterval(() => ws.readyState === WebSocket.OPEN && ws.send('{"type":"heartbeat"}'), 10_000);
        beat.unref();
        ws.on('close', () => clearInterval(beat));
        resolve({
          name,
          agentId: String(m.agent_id),
          extensions: ws.extensions || 'none',
          dispatched,
          answered,
          close: () =>
            new Promise<void>((done) => {
              if (ws.readyState === WebSocket.CLOSED) return done();
              ws.once('close', () => done());
              ws.close(1000, 'bench over');
            }),
        });
      } else if (m.type === 'error') reject(new Error(`enrollment refused: ${m.code} ${m.message}`));
    });
  });
}

// ---- one invocation, the way a caller sees it ----

interface Outcome {
  readonly id: string | null;
  /** The last status frame of the events stream (null when it never came). */
  readonly status: string | null;
  /** POST sent -> 201 read. */
  readonly postMs: number;
  /** POST sent -> terminal status frame read on the events stream. */
  readonly totalMs: number;
  /** POST sent -> the dispatch reached the agent (scripted agents only). */
  readonly dispatchMs: number | null;
  readonly error: string | null;
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

async function invoke(pool: Pool, key: string, tool: string): Promise<Outcome> {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const t0 = performance.now();
  let id: string | null = null;
  let postMs = 0;
  try {
    const res = await pool.request({ method: 'POST', path: `/${PROJECT}/v1/exec/invocations`, headers, body: JSON.stringify({ workspace_id: WS_OPS, tool_name: tool, arguments: {} }) });
    const created = (await res.body.json()) as { id?: string; error?: { code: string } };
    postMs = performance.now() - t0;
    if (res.statusCode !== 201 || !created.id) throw new Error(`POST answered ${res.statusCode} ${created.error?.code ?? ''}`);
    id = created.id;
    const ev = await pool.request({ method: 'GET', path: `/${PROJECT}/v1/exec/invocations/${id}/events`, headers: { authorization: headers.authorization, accept: 'text/event-stream' } });
    if (ev.statusCode !== 200) throw new Error(`events answered ${ev.statusCode}`);
    let buffer = '';
    let status: string | null = null;
    let terminalAt: number | null = null;
    for await (const chunk of ev.body) {
      buffer += String(chunk);
      for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
        const frame = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const data = frame.startsWith('data: ') ? frame.slice(6) : '';
        if (!data || data === '[DONE]') continue;
        const parsed = JSON.parse(data) as { type?: string; status?: string };
        if (parsed.type === 'status' && parsed.status) {
          status = parsed.status;
          if (TERMINAL.has(status) && terminalAt === null) terminalAt = performance.now();
        }
      }
    }
    const seen = dispatchSeenAt.get(id);
    dispatchSeenAt.delete(id);
    return { id, status, postMs, totalMs: (terminalAt ?? performance.now()) - t0, dispatchMs: seen === undefined ? null : seen - t0, error: terminalAt === null ? 'the stream ended without a terminal status' : null };
  } catch (err) {
    return { id, status: null, postMs, totalMs: performance.now() - t0, dispatchMs: null, error: err instanceof Error ? err.message : String(err) };
  }
}

// ---- the floor ----

function wsEcho(url: string): Promise<{ roundTrip: (text: string) => Promise<number>; close: () => void }> {
  const ws = new WebSocket(url.replace(/^http/, 'ws'));
  let waiting: (() => void) | null = null;
  ws.on('message', () => {
    const w = waiting;
    waiting = null;
    w?.();
  });
  return new Promise((resolve, reject) => {
    ws.on('error', reject);
    ws.on('open', () =>
      resolve({
        roundTrip: (text) =>
          new Promise<number>((done) => {
            const t0 = performance.now();
            waiting = () => done(performance.now() - t0);
            ws.send(text);
          }),
        close: () => ws.close(),
      }),
    );
  });
}

async function httpPair(pool: Pool, body: string): Promise<number> {
  const t0 = performance.now();
  const a = await pool.request({ method: 'POST', path: '/v1/echo', headers: { 'content-type': 'application/json' }, body });
  await a.body.text();
  const b = await pool.request({ method: 'GET', path: '/v1/echo/events', headers: { accept: 'text/event-stream' } });
  await b.body.text();
  return performance.now() - t0;
}

// ---- statistics ----

function pct(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
const fmt = (n: number | null, digits = 2): string => (n === null ? '-' : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }));
const count = <T>(xs: readonly T[], f: (x: T) => boolean): number => xs.reduce((n, x) => n + (f(x) ? 1 : 0), 0);

/** Gateway CPU (utime + stime) in microseconds, read around a piece of work. */
function cpuUs(pid: number): number | null {
  const t = cpuTicks(pid);
  return t === null ? null : (t / clkTck()) * 1e6;
}

interface Sequential {
  readonly invocations: Outcome[];
  readonly wsFloor: number[];
  readonly httpFloor: number[];
  readonly gatewayCpuUs: number | null;
}

interface Concurrent {
  readonly outcomes: Outcome[];
  readonly elapsedMs: number;
  readonly lastCreatedMs: number;
  readonly uniqueIds: number;
  readonly dispatchedOnce: number;
  readonly answeredOnce: number;
  readonly dispatchedTwice: number;
  readonly neverDispatched: number;
  readonly unknownAtAgents: number;
  readonly storedCompleted: number;
  readonly storedOther: Map<string, number>;
  readonly perAgent: number[];
  readonly gatewayCpuUs: number | null;
}

function render(seq: Sequential, ref: Outcome[], conc: Concurrent, env: { pinning: string; load: string; extensions: string; queuedNote: string }): string {
  const inv = seq.invocations.filter((o) => o.error === null);
  const total = inv.map((o) => o.totalMs);
  const post = inv.map((o) => o.postMs);
  const disp = inv.flatMap((o) => (o.dispatchMs === null ? [] : [o.dispatchMs]));
  const refOk = ref.filter((o) => o.error === null);
  const refTotal = refOk.map((o) => o.totalMs);
  const wsP50 = pct(seq.wsFloor, 50);
  const httpP50 = pct(seq.httpFloor, 50);
  const floorP50 = wsP50 !== null && httpP50 !== null ? wsP50 + httpP50 : null;
  const totP50 = pct(total, 50);
  const completed = count(conc.outcomes, (o) => o.status === 'completed');
  const concTotals = conc.outcomes.filter((o) => o.error === null).map((o) => o.totalMs);
  const lost = conc.outcomes.length - completed;
  const row = (label: string, xs: readonly number[]) => `| ${label} | ${xs.length} | ${fmt(pct(xs, 50), 3)} | ${fmt(pct(xs, 99), 3)} | ${fmt(Math.max(...xs), 3)} |`;
  const others = [...conc.storedOther].map(([s, n]) => `${n} x ${s}`).join(', ');
  return [
    '## Execution surface: invocation round trip and 1,000 concurrent invocations',
    '',
    `Round trip, sequential: POST \`/${PROJECT}/v1/exec/invocations\` (workspace ${WS_OPS}, a \`read\` tool, no approval) then GET its \`/events\` stream until the terminal status frame: the end point is the moment the caller *learns* the invocation completed, through the API, not the moment the agent answered. The agent is a scripted \`ws\` client in the bench process answering each \`invocation.dispatch\` at once with \`invocation.result\` exit 0, so the figure is the gateway's cost plus the wire, with no child process. Floor, same run, in ${ROUNDS} alternating blocks: a plain \`ws\` echo round trip and the same two HTTP requests (POST + GET) to a plain Node process (bench/exec-echo.ts) on the gateway's core. ${WARMUP} warm-up round trips of each kind first, not counted.`,
    '',
    '| round trip (sequential) | n | p50 ms | p99 ms | max ms |',
    '|---|---:|---:|---:|---:|',
    row('**invocation through the gateway, scripted agent** (POST -> terminal status on the events stream)', total),
    row('  of which POST -> dispatch received at the agent', disp),
    row('  of which POST -> 201 read', post),
    row('floor: plain `ws` echo round trip, bench process <-> a Node process', seq.wsFloor),
    row('floor: plain HTTP POST + GET to the same Node process', seq.httpFloor),
    row('invocation through the gateway, **real reference agent** (`switchboard agent` running `true`: spawn included)', refTotal),
    '',
    `- gateway CPU per sequential invocation (create + dispatch + result + the events stream): ${fmt(seq.gatewayCpuUs === null ? null : seq.gatewayCpuUs / Math.max(1, seq.invocations.length), 0)} us; errors: ${seq.invocations.length - inv.length} of ${seq.invocations.length} scripted, ${ref.length - refOk.length} of ${ref.length} with the reference agent (completed: ${count(ref, (o) => o.status === 'completed')})`,
    `- reading: an invocation round trip has a p50 of ${fmt(totP50, 2)} ms against a floor of ${fmt(floorP50, 2)} ms (one \`ws\` round trip plus two plain HTTP requests), so the gateway adds about ${fmt(totP50 !== null && floorP50 !== null ? totP50 - floorP50 : null, 2)} ms per invocation at p50; its path is three SQLite transactions (create, dispatched, completed; on the synchronous=NORMAL connection of frequent writers, src/main.ts busyDb, so no commit waits for an fsync) and the events stream. The machine was shared and loaded during the run (load average below, on 2 cores): read the figures as an order of magnitude, the floor moves less than the gateway because it does no SQLite work. With the reference agent, the p50 of ${fmt(pct(refTotal, 50), 2)} ms includes spawning \`true\` in the agent process.`,
    '',
    `1,000-style concurrency: ${conc.outcomes.length.toLocaleString('en-US')} invocations launched at once over ${AGENTS} scripted agents (the same no-op agent), each caller on its own HTTP connection doing POST then following its events stream to the end.`,
    '',
    '| invocations | completed (events stream) | read back completed | dispatched exactly once | answered exactly once | dispatched twice | never dispatched | unknown ids at agents | total s | invocations/s | per-invocation p50 / p99 ms | gateway CPU/invocation us | per agent min / max |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    `| ${conc.outcomes.length} | ${completed} | ${conc.storedCompleted} | ${conc.dispatchedOnce} | ${conc.answeredOnce} | ${conc.dispatchedTwice} | ${conc.neverDispatched} | ${conc.unknownAtAgents} | ${fmt(conc.elapsedMs / 1000, 2)} | ${fmt(conc.outcomes.length / (conc.elapsedMs / 1000), 0)} | ${fmt(pct(concTotals, 50), 1)} / ${fmt(pct(concTotals, 99), 1)} | ${fmt(conc.gatewayCpuUs === null ? null : conc.gatewayCpuUs / conc.outcomes.length, 0)} | ${Math.min(...conc.perAgent)} / ${Math.max(...conc.perAgent)} |`,
    '',
    `- ${lost === 0 && conc.dispatchedTwice === 0 && conc.unknownAtAgents === 0 && conc.storedCompleted === conc.outcomes.length ? 'none lost, none twice: every invocation ended `completed` on its stream and in the store, each dispatched to one agent once and answered once' : `**not clean**: ${lost} not completed on their stream${others ? ` (stored: ${others})` : ''}; first errors: ${[...new Set(conc.outcomes.flatMap((o) => (o.error ? [o.error] : [])))].slice(0, 3).join('; ') || 'none'}`}. Total time runs from the first POST to the last terminal status frame (the last 201 came at ${fmt(conc.lastCreatedMs / 1000, 2)} s); the gateway serves the 1,000 HTTP connections, ${AGENTS} agent sockets and every SQLite commit on one thread. ${env.queuedNote}`,
    `- agent sockets: \`ws\` client with its default options, negotiated extensions: ${env.extensions}; timing in the bench process (performance.now()), which runs the callers and the agents`,
    `- pinning: ${env.pinning}; the simulator runs but is idle (exec traffic never calls a model); 1-minute load average ${env.load}; run ${new Date().toISOString()}, \`npm run build && node dist/bench/exec.js\`${quick ? ' (BENCH_QUICK=1)' : ''}`,
  ].join('\n');
}

async function main(): Promise<void> {
  const { pinned, dir, loadLine } = standaloneBench('switchboard-bench-exec-');
  const agents: ScriptedAgent[] = [];
  try {
    const sim = await startSim(dir, pinned ? 0 : null);
    const echo = await startEcho(dir, pinned ? 1 : null);
    const cfg = writeConfig(dir, sim.url);
    const gw = await startGateway(dir, pinned ? 1 : null, { name: 'gateway-exec', config: cfg.file, db: cfg.db, logLevel: 'warn' });
    const origin = new URL(gw.url).origin;
    const wsUrl = `${origin.replace(/^http/, 'ws')}/${PROJECT}/v1/exec/agents/connect`;
    const pool = new Pool(origin, { connections: 4 });
    const mint = await pool.request({ method: 'POST', path: `/${PROJECT}/v1/management/exec/join-keys`, headers: { authorization: `Bearer ${cfg.key}`, 'content-type': 'application/json' }, body: '{"name":"bench"}' });
    const joinKey = ((await mint.body.json()) as { value?: string }).value;
    if (mint.statusCode !== 201 || !joinKey) throw new Error(`minting a join key answered ${mint.statusCode}`);

    // 1. sequential round trip, one scripted agent, floor in alternating blocks
    agents.push(await connectScripted(wsUrl, joinKey, 'bench-agent-0', 'noop'));
    const echoPool = new Pool(echo.url, { connections: 4 });
    const echoWs = await wsEcho(echo.url);
    const dispatchLike = JSON.stringify({ type: 'invocation.dispatch', invocation_id: `inv_${randomBytes(12).toString('hex')}`, tool_name: 'noop', arguments: {}, timeout_ms: 60000 });
    const bodyLike = JSON.stringify({ workspace_id: WS_OPS, tool_name: 'noop', arguments: {} });
    for (let i = 0; i < WARMUP; i++) {
      await echoWs.roundTrip(dispatchLike);
      await httpPair(echoPool, bodyLike);
      const o = await invoke(pool, cfg.key, 'noop');
      if (o.error) throw new Error(`warm-up invocation failed: ${o.error}`);
    }
    const seq: { invocations: Outcome[]; wsFloor: number[]; httpFloor: number[]; cpu: number | null } = { invocations: [], wsFloor: [], httpFloor: [], cpu: 0 };
    const block = Math.ceil(SEQ_N / ROUNDS);
    for (let r = 0; r < ROUNDS; r++) {
      for (let i = 0; i < block; i++) seq.wsFloor.push(await echoWs.roundTrip(dispatchLike));
      for (let i = 0; i < block; i++) seq.httpFloor.push(await httpPair(echoPool, bodyLike));
      const before = cpuUs(gw.pid);
      for (let i = 0; i < block; i++) seq.invocations.push(await invoke(pool, cfg.key, 'noop'));
      const after = cpuUs(gw.pid);
      seq.cpu = seq.cpu === null || before === null || after === null ? null : seq.cpu + (after - before);
      log(`round ${r + 1}/${ROUNDS}: invocation p50 ${fmt(pct(seq.invocations.slice(-block).map((o) => o.totalMs), 50), 3)} ms, ws floor p50 ${fmt(pct(seq.wsFloor.slice(-block), 50), 3)} ms, http floor p50 ${fmt(pct(seq.httpFloor.slice(-block), 50), 3)} ms`);
    }
    echoWs.close();
    await echoPool.close();

    // 1b. the real reference agent running `true`
    const manifest = join(dir, 'ref-tools.yaml');
    writeFileSync(manifest, stringify({ name: 'bench-reference', tools: { run_true: { command: ['true'], description: 'runs true', risk: 'read', input_schema: { type: 'object' } } } }));
    const refAgent = await startProc({
      name: 'reference-agent',
      args: [join(distDir, 'src/cli.js'), 'agent', '--url', wsUrl, '--manifest', manifest],
      env: { SWITCHBOARD_JOIN_KEY: joinKey },
      core: pinned ? 0 : null,
      logDir: dir,
      ready: (t) => /enrolled as (agt_\w+)/.exec(t)?.[1] ?? null,
    });
    for (let i = 0; i < 10; i++) await invoke(pool, cfg.key, 'run_true');
    const ref: Outcome[] = [];
    for (let i = 0; i < REF_N; i++) ref.push(await invoke(pool, cfg.key, 'run_true'));
    log(`reference agent: p50 ${fmt(pct(ref.map((o) => o.totalMs), 50), 3)} ms over ${REF_N}`);
    await refAgent.stop();

    // 2. concurrent invocations over 10 agents
    for (let i = 1; i < AGENTS; i++) agents.push(await connectScripted(wsUrl, joinKey, `bench-agent-${i}`, 'noop'));
    for (const a of agents) {
      a.dispatched.clear();
      a.answered.clear();
    }
    dispatchSeenAt.clear();
    const wide = new Pool(origin, { connections: CONCURRENT });
    const cpuBefore = cpuUs(gw.pid);
    const t0 = performance.now();
    let lastCreated = 0;
    const outcomes = await Promise.all(
      Array.from({ length: CONCURRENT }, async () => {
        const o = await invoke(wide, cfg.key, 'noop');
        lastCreated = Math.max(lastCreated, o.postMs);
        return o;
      }),
    );
    const elapsedMs = performance.now() - t0;
    const cpuAfter = cpuUs(gw.pid);
    await wide.close();
    const ids = outcomes.flatMap((o) => (o.id ? [o.id] : []));
    const idSet = new Set(ids);
    const sum = (m: 'dispatched' | 'answered', id: string): number => agents.reduce((n, a) => n + (a[m].get(id) ?? 0), 0);
    const atAgents = new Set(agents.flatMap((a) => [...a.dispatched.keys()]));
    // Read every invocation back from the store (not timed).
    const storedOther = new Map<string, number>();
    let storedCompleted = 0;
    let maxQueuedMs = 0;
    for (let i = 0; i < ids.length; i += 50) {
      const page = await Promise.all(
        ids.slice(i, i + 50).map(async (id) => {
          const res = await pool.request({ method: 'GET', path: `/${PROJECT}/v1/exec/invocations/${id}`, headers: { authorization: `Bearer ${cfg.key}` } });
          const inv = (await res.body.json()) as { status?: string; created_at?: string; dispatched_at?: string | null };
          if (inv.created_at && inv.dispatched_at) maxQueuedMs = Math.max(maxQueuedMs, Date.parse(inv.dispatched_at) - Date.parse(inv.created_at));
          return inv.status ?? `http ${res.statusCode}`;
        }),
      );
      for (const s of page) if (s === 'completed') storedCompleted++;
      else storedOther.set(s, (storedOther.get(s) ?? 0) + 1);
    }
    const conc: Concurrent = {
      outcomes,
      elapsedMs,
      lastCreatedMs: lastCreated,
      uniqueIds: idSet.size,
      dispatchedOnce: count(ids, (id) => sum('dispatched', id) === 1),
      answeredOnce: count(ids, (id) => sum('answered', id) === 1),
      dispatchedTwice: count(ids, (id) => sum('dispatched', id) > 1),
      neverDispatched: count(ids, (id) => sum('dispatched', id) === 0),
      unknownAtAgents: [...atAgents].filter((id) => !idSet.has(id)).length,
      storedCompleted,
      storedOther,
      perAgent: agents.map((a) => a.dispatched.size),
      gatewayCpuUs: cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore,
    };
    log(`concurrent: ${count(outcomes, (o) => o.status === 'completed')} of ${CONCURRENT} completed in ${fmt(elapsedMs, 0)} ms`);
    // Did any invocation wait in `queued`? The stored dispatched_at - created_at says (the dispatch goes out inside the POST).
    const queuedNote = `Longest gap between an invocation's stored created_at and dispatched_at: ${maxQueuedMs} ms; both are stamped inside the one synchronous POST handler (src/exec/invocations/invocation-service.ts create -> #dispatch), around the create transaction's commit, so that gap is one commit (its WAL fsync) while the event loop, and every other caller, waits.`;
    const load = loadLine();
    const pinning = pinned ? 'bench process (callers and agents), simulator and reference agent on core 0; gateway and echo process on core 1 (taskset -c)' : 'none';
    const section = render({ invocations: seq.invocations, wsFloor: seq.wsFloor, httpFloor: seq.httpFloor, gatewayCpuUs: seq.cpu }, ref, conc, { pinning, load, extensions: agents[0]?.extensions ?? '-', queuedNote });
    process.stdout.write(`${section}\n`);
    writeResultsSection('exec', section);
    await pool.close();
  } finally {
    await Promise.all(agents.map((a) => a.close().catch(() => undefined)));
    await stopAll();
  }
}

runIfEntryPoint(import.meta.url, 'exec', main);
