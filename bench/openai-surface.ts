/**
 * The OpenAI surface's bench (issue 14, "Tests and figures"), written into the `openai-surface` section of
 * bench/RESULTS.md. A gateway and a simulator run as real processes, the gateway pinned to core 1, this
 * process (autocannon, the batch client) and the simulator to core 0.
 *   1. Responses route overhead: the same turn (the same prompt, an `echo:` prompt so the simulator's
 *      answer is the same 20 tokens either way) through POST .../v1/chat/completions and POST
 *      .../v1/responses, non-streaming and streaming, 50 connections, in alternating rounds (the order of
 *      the sides changes every round, so a noisy minute or a cost of going second falls on every side).
 *      Gateway CPU per request from /proc/<pid>/stat around each round; the figure is the median of the
 *      rounds' responses / chat ratios. Two Responses variants: `store: false` (the translation alone) and
 *      the default (`store` omitted = true, what the SDK sends: the Response is written to SQLite).
 *   2. Batch throughput beside live traffic: a batch of 2,000 chat lines runs while autocannon sends live
 *      chat requests at a fixed overall rate; live p50/p99 with the batch running against the same live
 *      load without it, in alternating rounds of the same run (a "without" round lasts as long as the
 *      last batch took).
 *   npm run build && node dist/bench/openai-surface.js     (BENCH_QUICK=1: fewer and shorter rounds)
 * SURFACE_ROUTES=stream (or json): part 1 for that kind of turn only, printed, RESULTS.md left as it is
 * (a quick before/after of the Responses stream, issue 35); SURFACE_ROUNDS overrides the round count;
 * SURFACE_SIDES=resp (or resp-stored) runs chat and that side only (a profile of one Responses variant).
 * SURFACE_OTHER_DIST=<another build's dist/> (with SURFACE_ROUTES): both builds' gateways in the same
 * rounds, each build's Responses sides against its own chat side (a before/after in one run).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { request } from 'undici';
import { stringify } from 'yaml';
import { parseConfig } from '../src/config.js';
import { BENCH_MODEL } from './config.js';
import { clkTck, cpuTicks, startCpuMeter, threadTicks, threadUsPerRequest } from './cpu.js';
import { median } from './limiter-cost.js';
import { percentile, runLoad, type LoadResult } from './load.js';
import { writeResultsSection } from './sections.js';
import { runIfEntryPoint, standaloneBench, startGateway, startSimulator, stopAll } from './targets.js';

const quick = process.env.BENCH_QUICK === '1';
const ROUNDS = Number(process.env.SURFACE_ROUNDS ?? (quick ? 3 : 5));
const ROUND_SECONDS = quick ? 2 : 4;
const CONNECTIONS = 50;
/**
 * SURFACE_RATE: every side at this many requests a second instead of as fast as answered. Saturated, a
 * side whose answers are bigger runs at a lower rate, and a gateway under less load batches less (reads,
 * writes and journal rows a loop turn): its CPU per request rises for that alone, and the rounds' ratios
 * spread (1.1-2.7x in one run, 2026-11-29). At one rate below saturation the sides do the same batching.
 */
const RATE = process.env.SURFACE_RATE === undefined ? undefined : Number(process.env.SURFACE_RATE);
const BATCH_LINES = Number(process.env.BENCH_BATCH_LINES ?? (quick ? 500 : 2000));
const BATCH_ROUNDS = quick ? 2 : 4;
const LIVE_CONNECTIONS = 10;
const LIVE_RATE = Number(process.env.BENCH_LIVE_RATE ?? 1000);
const PROJECT = 'proj_bench';
const SLUG = 'chat';
const log = (msg: string): void => void process.stderr.write(`bench openai-surface: ${msg}\n`);

/** 20 words after `echo:`: the simulator answers them back, 20 tokens, whichever route the turn came by. */
const PROMPT = `echo: ${Array.from({ length: 20 }, (_, i) => `word${i}`).join(' ')}`;
const ANSWER = PROMPT.slice('echo:'.length).trim();

// ---- config ----

function writeConfig(dir: string, upstream: string): { file: string; db: string; key: string } {
  const key = `svc_bench_${randomBytes(32).toString('base64url')}`;
  const raw = {
    server: { host: '127.0.0.1', port: 0 },
    storage: { path: join(dir, 'surface.db') },
    security: { allow_private_targets: true, allow_http_targets: true },
    // The bench polls its batch and uploads its input files: no control-plane ceiling in the way.
    limits: { management_requests_per_minute: 0, files_requests_per_minute: 0 },
    projects: [
      {
        id: PROJECT,
        slug: 'bench',
        rate_limit: { requests_per_minute: 0, tokens_per_minute: 0 },
        default_workspace: 'ws_0a1b2c',
        workspaces: [{ id: 'ws_0a1b2c', name: 'Bench' }],
        endpoints: [
          {
            id: randomUUID(),
            slug: SLUG,
            name: SLUG,
            kind: 'chat',
            tier: 'gpu',
            model: { id: BENCH_MODEL, context_window: 32768 },
            upstream: { base_url: upstream, model: 'sim-chat' },
          },
        ],
        keys: [{ value: key, scopes: ['inference'] }],
      },
    ],
  };
  parseConfig(raw, 'openai-surface bench config');
  const file = join(dir, 'surface.yaml');
  writeFileSync(file, stringify(raw), { mode: 0o600 });
  return { file, db: join(dir, 'surface.db'), key };
}

// ---- part 1: the same turn through chat completions and responses ----

interface Side {
  readonly id: string;
  readonly label: string;
  readonly path: string;
  readonly body: string;
}

function sidesFor(stream: boolean): Side[] {
  const chat = { model: BENCH_MODEL, messages: [{ role: 'user', content: PROMPT }], ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) };
  const resp = { model: BENCH_MODEL, input: PROMPT, ...(stream ? { stream: true } : {}) };
  // SURFACE_SIDES=chat,resp: only those (chat always stays, first: the ratios are against it); a profile of fewer sides.
  const only = process.env.SURFACE_SIDES?.split(',');
  const all: Side[] = [
    { id: 'chat', label: 'chat completions', path: `/${PROJECT}/${SLUG}/v1/chat/completions`, body: JSON.stringify(chat) },
    { id: 'resp', label: 'responses, store: false', path: `/${PROJECT}/${SLUG}/v1/responses`, body: JSON.stringify({ ...resp, store: false }) },
    { id: 'resp-stored', label: 'responses, store default (true)', path: `/${PROJECT}/${SLUG}/v1/responses`, body: JSON.stringify(resp) },
  ];
  return only ? all.filter((side) => side.id === 'chat' || only.includes(side.id)) : all;
}

interface Run {
  readonly load: LoadResult;
  readonly cpuUsPerReq: number | null;
}

/** The answer text one request of a side gets back, and its SSE frame count when streamed. */
async function probeSide(origin: string, key: string, side: Side, stream: boolean): Promise<{ status: number; text: string | null; frames: number }> {
  const res = await request(`${origin}${side.path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: side.body });
  const raw = await res.body.text();
  if (res.statusCode !== 200) return { status: res.statusCode, text: raw.slice(0, 200), frames: 0 };
  if (!stream) {
    const body = JSON.parse(raw) as { choices?: { message: { content: string } }[]; output?: { type: string; content?: { type: string; text: string }[] }[] };
    const text = body.choices ? (body.choices[0]?.message.content ?? null) : (body.output ?? []).flatMap((o) => (o.type === 'message' ? (o.content ?? []).map((c) => c.text) : [])).join('');
    return { status: 200, text, frames: 0 };
  }
  const frames = raw.split('\n').filter((l) => l.startsWith('data:'));
  let text = '';
  for (const f of frames) {
    const data = f.slice(5).trim();
    if (data === '[DONE]') continue;
    const ev = JSON.parse(data) as { type?: string; delta?: string; choices?: { delta?: { content?: string } }[] };
    if (ev.choices) text += ev.choices[0]?.delta?.content ?? '';
    else if (ev.type === 'response.output_text.delta') text += ev.delta ?? '';
  }
  return { status: 200, text, frames: frames.length };
}

async function runSide(origin: string, key: string, side: Side, pid: number, seconds: number): Promise<Run> {
  const t0 = process.hrtime.bigint() / 1000n;
  const threadsBefore = process.env.SURFACE_THREADS === '1' ? threadTicks(pid) : null;
  const meter = startCpuMeter(pid);
  const load = await runLoad({ url: `${origin}${side.path}`, connections: CONNECTIONS, seconds, headers: { authorization: `Bearer ${key}` }, body: side.body, ...(RATE === undefined ? {} : { rate: RATE }) });
  const cpuUsPerReq = meter.stop(load.completed);
  // SURFACE_THREADS=1: the side's CPU per request by gateway thread (which thread a difference is on).
  if (threadsBefore !== null) {
    const perThread = [...threadUsPerRequest(threadsBefore, threadTicks(pid), load.completed)];
    log(`threads ${side.id} (gateway pid ${pid}): ${perThread.filter(([, us]) => us >= 0.5).map(([name, us]) => `${name} ${us.toFixed(1)}`).join(', ')} us/req`);
  }
  // With BENCH_PROFILE_DIR, the side's window on the profile's clock (monotonic us): a profile split by side.
  if (process.env.BENCH_PROFILE_DIR) log(`window ${side.id} ${t0} ${process.hrtime.bigint() / 1000n} ${load.completed}`);
  return { load, cpuUsPerReq };
}

/**
 * The order of the three sides in each round: every side goes first, second and last about equally often
 * over 5 rounds (first: chat 2, store false 1, stored 2; last: chat 2, store false 2, stored 1).
 */
const ORDERS: readonly (readonly number[])[] = [
  [0, 1, 2],
  [2, 1, 0],
  [1, 2, 0],
  [0, 2, 1],
  [2, 0, 1],
  [1, 0, 2],
];

interface Overhead {
  readonly stream: boolean;
  readonly sides: readonly Side[];
  /** runs[side][round] */
  readonly runs: Run[][];
  readonly probes: { status: number; text: string | null; frames: number }[];
}

async function routeOverhead(origin: string, key: string, pid: number, stream: boolean): Promise<Overhead> {
  const sides = sidesFor(stream);
  const probes = [];
  for (const s of sides) probes.push(await probeSide(origin, key, s, stream));
  for (const s of sides) await runSide(origin, key, s, pid, 1); // warm-up, not counted
  const runs: Run[][] = sides.map(() => []);
  for (let r = 0; r < ROUNDS; r++) {
    for (const i of ORDERS[r % ORDERS.length]!.filter((i) => i < sides.length)) runs[i]!.push(await runSide(origin, key, sides[i]!, pid, ROUND_SECONDS));
    const cpu = runs.map((rs) => `${rs[r]?.cpuUsPerReq?.toFixed(1) ?? '-'} us (${rs[r]?.load.reqPerSec.toFixed(0) ?? '-'} req/s)`);
    log(`${stream ? 'streaming' : 'non-streaming'}, round ${r + 1}: ${sides.map((s, i) => `${s.id} ${cpu[i]}`).join(', ')}`);
  }
  return { stream, sides, runs, probes };
}

/** A gateway of the before/after comparison (SURFACE_OTHER_DIST). */
interface Build {
  readonly label: string;
  readonly origin: string;
  readonly pid: number;
}

/**
 * Part 1's quick form for two builds in one run: every side of every build in each round, the order
 * rotated each round and reversed every other, so a noisy minute falls on every cell. Each build's ratios
 * are against its own chat side of the same round.
 */
async function compareBuilds(builds: readonly Build[], key: string, stream: boolean): Promise<void> {
  const sides = sidesFor(stream);
  const cells = builds.flatMap((build) => sides.map((side, i) => ({ build, side, i })));
  for (const c of cells) await runSide(c.build.origin, key, c.side, c.build.pid, 1); // warm-up, not counted
  const cpu = cells.map((): number[] => []);
  for (let r = 0; r < ROUNDS; r++) {
    const order = cells.map((_, k) => (k + r) % cells.length);
    if (r % 2 === 1) order.reverse();
    for (const k of order) {
      const c = cells[k]!;
      cpu[k]!.push((await runSide(c.build.origin, key, c.side, c.build.pid, ROUND_SECONDS)).cpuUsPerReq ?? Number.NaN);
    }
    log(`round ${r + 1}: ${cells.map((c, k) => `${c.build.label} ${c.side.id} ${cpu[k]![r]!.toFixed(1)}`).join(', ')}`);
  }
  for (const [k, c] of cells.entries()) {
    const chat = cpu[cells.findIndex((d) => d.build === c.build && d.i === 0)]!;
    const ratios = cpu[k]!.map((x, r) => x / chat[r]!);
    log(`${c.build.label} ${c.side.label}: CPU/req median ${median(cpu[k]!)?.toFixed(1)} us; vs its chat median ${median(ratios)?.toFixed(2)}x (${ratios.map((x) => x.toFixed(2)).join(', ')})`);
  }
}

// ---- part 2: a batch beside live traffic ----

/**
 * Live traffic at a fixed overall rate until stopped. autocannon only stops on its next 1 s tick, so the
 * figures count the responses that came back before `stop` was called, over the time until then.
 */
function startLive(url: string, key: string): { stop: () => Promise<LoadResult> } {
  const samples: number[] = [];
  const statusCodes: Record<string, number> = {};
  let recording = true;
  const t0 = performance.now();
  let finish: ((r: autocannon.Result) => void) | null = null;
  let fail: ((e: Error) => void) | null = null;
  const done = new Promise<autocannon.Result>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  const body = JSON.stringify({ model: BENCH_MODEL, messages: [{ role: 'user', content: PROMPT }] });
  const instance = autocannon(
    { url, method: 'POST', connections: LIVE_CONNECTIONS, overallRate: LIVE_RATE, duration: 600, pipelining: 1, timeout: 10, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body },
    (err: unknown, result: autocannon.Result) => (err ? fail?.(err instanceof Error ? err : new Error(String(err))) : finish?.(result)),
  );
  instance.on('response', (_c: unknown, statusCode: number, _b: number, responseTime: number) => {
    if (!recording) return;
    samples.push(responseTime);
    statusCodes[String(statusCode)] = (statusCodes[String(statusCode)] ?? 0) + 1;
  });
  return {
    stop: async () => {
      recording = false;
      const seconds = (performance.now() - t0) / 1000;
      instance.stop();
      const result = await done;
      const sorted = Float64Array.from(samples).sort();
      const non2xx = Object.entries(statusCodes).reduce((n, [code, k]) => n + (code.startsWith('2') ? 0 : k), 0);
      return { completed: samples.length, reqPerSec: samples.length / seconds, p50: percentile(sorted, 50), p99: percentile(sorted, 99), non2xx, errors: result.errors, timeouts: result.timeouts, statusCodes };
    },
  };
}

async function uploadBatchFile(origin: string, key: string, n: number, tag: string): Promise<string> {
  const lines = Array.from({ length: n }, (_, i) =>
    JSON.stringify({ custom_id: `${tag}-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: BENCH_MODEL, messages: [{ role: 'user', content: `${PROMPT} line${i}` }] } }),
  );
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([`${lines.join('\n')}\n`], { type: 'application/jsonl' }), `${tag}.jsonl`);
  const res = await fetch(`${origin}/${PROJECT}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  const body = (await res.json()) as { id?: string };
  if (!res.ok || !body.id) throw new Error(`upload answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
  return body.id;
}

interface BatchRun {
  readonly seconds: number;
  readonly linesPerSec: number;
  readonly completed: number;
  readonly failed: number;
  readonly status: string;
}

async function runBatch(origin: string, key: string, fileId: string): Promise<BatchRun> {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const t0 = performance.now();
  const res = await request(`${origin}/${PROJECT}/v1/batches`, { method: 'POST', headers, body: JSON.stringify({ input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' }) });
  const created = (await res.body.json()) as { id?: string };
  if (res.statusCode !== 200 || !created.id) throw new Error(`batch create answered ${res.statusCode}: ${JSON.stringify(created).slice(0, 300)}`);
  for (;;) {
    await new Promise((r) => setTimeout(r, 50));
    const got = await request(`${origin}/${PROJECT}/v1/batches/${created.id}`, { headers });
    const b = (await got.body.json()) as { status: string; request_counts?: { completed: number; failed: number } };
    if (['completed', 'failed', 'expired', 'cancelled'].includes(b.status)) {
      const seconds = (performance.now() - t0) / 1000;
      return { seconds, linesPerSec: BATCH_LINES / seconds, completed: b.request_counts?.completed ?? 0, failed: b.request_counts?.failed ?? 0, status: b.status };
    }
    if (performance.now() - t0 > 120_000) throw new Error(`batch ${created.id} still ${b.status} after 120 s`);
  }
}

interface LiveRound {
  readonly live: LoadResult;
  /** Gateway CPU time over the round's wall time (1.0 = one core busy). */
  readonly gatewayCores: number | null;
  readonly batch: BatchRun | null;
}

function cpuSeconds(pid: number): number | null {
  const t = cpuTicks(pid);
  return t === null ? null : t / clkTck();
}

async function liveRound(origin: string, key: string, pid: number, batchFile: string | null, seconds: number): Promise<LiveRound> {
  const c0 = cpuSeconds(pid);
  const t0 = performance.now();
  const live = startLive(`${origin}/${PROJECT}/${SLUG}/v1/chat/completions`, key);
  let batch: BatchRun | null = null;
  if (batchFile) batch = await runBatch(origin, key, batchFile);
  else await new Promise((r) => setTimeout(r, seconds * 1000));
  const stopped = live.stop();
  const wall = (performance.now() - t0) / 1000;
  const c1 = cpuSeconds(pid);
  const result = await stopped;
  return { live: result, gatewayCores: c0 === null || c1 === null ? null : (c1 - c0) / wall, batch };
}

interface BatchBeside {
  readonly alone: BatchRun;
  /** Gateway CPU per line, and cores busy, while the first batch ran alone. */
  readonly aloneCpuMsPerLine: number | null;
  readonly aloneCores: number | null;
  readonly withBatch: LiveRound[];
  readonly without: LiveRound[];
}

async function batchBesideLive(origin: string, key: string, pid: number): Promise<BatchBeside> {
  // Every round's input file is uploaded before any round starts: uploads are not part of the figures.
  const files: string[] = [];
  for (let i = 0; i <= BATCH_ROUNDS; i++) files.push(await uploadBatchFile(origin, key, BATCH_LINES, `b${i}`));
  const c0 = cpuSeconds(pid);
  const alone = await runBatch(origin, key, files[0]!); // also the batch path's warm-up
  const c1 = cpuSeconds(pid);
  const aloneCpuMsPerLine = c0 === null || c1 === null ? null : ((c1 - c0) / BATCH_LINES) * 1000;
  const aloneCores = c0 === null || c1 === null ? null : (c1 - c0) / alone.seconds;
  log(`batch alone: ${BATCH_LINES} lines in ${alone.seconds.toFixed(2)} s (${alone.linesPerSec.toFixed(0)} lines/s, gateway ${aloneCpuMsPerLine?.toFixed(2)} ms CPU per line), ${alone.completed} completed, ${alone.failed} failed`);
  await liveRound(origin, key, pid, null, 1); // live warm-up, not counted
  const withBatch: LiveRound[] = [];
  const without: LiveRound[] = [];
  let lastSeconds = alone.seconds;
  for (let r = 0; r < BATCH_ROUNDS; r++) {
    const doWith = async () => {
      const round = await liveRound(origin, key, pid, files[r + 1]!, 0);
      lastSeconds = round.batch?.seconds ?? lastSeconds;
      withBatch.push(round);
    };
    const doWithout = async () => void without.push(await liveRound(origin, key, pid, null, lastSeconds));
    if (r % 2 === 0) {
      await doWith();
      await doWithout();
    } else {
      await doWithout();
      await doWith();
    }
    const w = withBatch[r]!;
    const o = without[r]!;
    log(`batch round ${r + 1}: batch ${w.batch?.linesPerSec.toFixed(0)} lines/s; live p50/p99 with ${w.live.p50?.toFixed(2)}/${w.live.p99?.toFixed(2)} ms, without ${o.live.p50?.toFixed(2)}/${o.live.p99?.toFixed(2)} ms`);
  }
  return { alone, aloneCpuMsPerLine, aloneCores, withBatch, without };
}

// ---- the report ----

const fmt = (n: number | null | undefined, digits = 1): string =>
  n === null || n === undefined || !Number.isFinite(n) ? '-' : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const med = <T>(xs: readonly T[], pick: (x: T) => number | null | undefined): number | null => median(xs.flatMap((x) => (pick(x) === null || pick(x) === undefined ? [] : [pick(x) as number])));

function ratios(o: Overhead, side: number): number[] {
  return o.runs[0]!.flatMap((c, r) => {
    const s = o.runs[side]![r]?.cpuUsPerReq ?? null;
    return c.cpuUsPerReq && s !== null ? [s / c.cpuUsPerReq] : [];
  });
}

function failures(runs: readonly { load: LoadResult }[] | readonly { live: LoadResult }[]): number {
  return (runs as readonly ({ load?: LoadResult; live?: LoadResult })[]).reduce((n, r) => {
    const l = (r.load ?? r.live) as LoadResult;
    return n + l.non2xx + l.errors + l.timeouts;
  }, 0);
}

function render(overheads: readonly Overhead[], b: BatchBeside, env: { pinning: string; load: string }): string {
  const rows = overheads.flatMap((o) =>
    o.sides.map((s, i) => {
      const runs = o.runs[i]!;
      const rs = i === 0 ? null : ratios(o, i);
      const ratio = rs === null ? '1 (reference)' : `**${fmt(median(rs), 2)}x** (${rs.map((x) => fmt(x, 2)).join(', ')})`;
      return `| ${o.stream ? 'streaming (20 tokens)' : 'non-streaming'} | ${s.label} | ${fmt(med(runs, (r) => r.load.reqPerSec), 0)} | ${fmt(med(runs, (r) => r.load.p50), 2)} | ${fmt(med(runs, (r) => r.load.p99), 2)} | ${fmt(med(runs, (r) => r.cpuUsPerReq))} | ${ratio} | ${failures(runs)} |`;
    }),
  );
  const probeNotes = overheads.map((o) => {
    const same = o.probes.every((p) => p.status === 200 && p.text === ANSWER);
    return `${o.stream ? 'streaming' : 'non-streaming'}: ${same ? 'every side answered 200 with the same 20-token text' : `MISMATCH ${JSON.stringify(o.probes.map((p) => [p.status, p.text]))}`}${o.stream ? ` (SSE data frames per answer: ${o.sides.map((s, i) => `${s.id} ${o.probes[i]?.frames}`).join(', ')})` : ''}`;
  });
  const headline = (stream: boolean, side: number): string => fmt(median(ratios(overheads.find((o) => o.stream === stream)!, side)), 2);
  const live = (rs: readonly LiveRound[], pick: (l: LoadResult) => number | null) => fmt(med(rs, (r) => pick(r.live)), 2);
  const perRound = (rs: readonly LiveRound[], pick: (l: LoadResult) => number | null) => rs.map((r) => fmt(pick(r.live), 2)).join(', ');
  const lps = b.withBatch.map((r) => r.batch?.linesPerSec ?? null);
  const batchFailed = b.withBatch.reduce((n, r) => n + (r.batch?.failed ?? 0), 0) + b.alone.failed;
  const batchOk = b.withBatch.reduce((n, r) => n + (r.batch?.completed ?? 0), 0) + b.alone.completed;
  return [
    '## OpenAI surface: Responses route overhead, and a batch beside live traffic',
    '',
    `The same turn through \`POST /${PROJECT}/${SLUG}/v1/chat/completions\` and \`POST /${PROJECT}/${SLUG}/v1/responses\`: an \`echo:\` prompt, so the simulator answers the same 20 tokens either way; the streamed chat request carries \`stream_options.include_usage\` as the Responses translation does (src/core/responses/translate.ts), so the upstream turn is byte for byte the same. ${CONNECTIONS} connections, ${ROUNDS} rounds of ${ROUND_SECONDS} s per side, the order of the sides changed every round (bench/openai-surface.ts ORDERS); gateway CPU per request from /proc/<pid>/stat around each round; medians over rounds. Responses with \`store: false\` is the route and the translation alone; with \`store\` omitted (true, what the SDK sends) each Response is also written to SQLite.`,
    '',
    '| turn | route | req/s | p50 ms | p99 ms | gateway CPU/req us | CPU vs chat (median; per round) | non-2xx + errors |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    ...probeNotes.map((p) => `- probe, ${p}`),
    '',
    `A batch of ${BATCH_LINES.toLocaleString('en-US')} chat lines (the same prompt plus a line number; \`batches.concurrency\` at its default, 4 lines in flight) beside live chat traffic: autocannon at a fixed ${LIVE_RATE.toLocaleString('en-US')} req/s overall over ${LIVE_CONNECTIONS} connections for as long as the batch runs (POST /v1/batches -> the poll, every 50 ms, that reads \`completed\`), against the same live load without a batch for as long as the last batch took; ${BATCH_ROUNDS} rounds, alternating which goes first; input files uploaded before the rounds. Latencies are autocannon's per-response times (sent -> answered; at a fixed rate autocannon does not count the time a request waited for its slot).`,
    '',
    '| | batch lines/s | live req/s | live p50 ms | live p99 ms | gateway CPU (cores) | live non-2xx + errors |',
    '|---|---:|---:|---:|---:|---:|---:|',
    `| batch alone (no live traffic, first run; gateway CPU ${fmt(b.aloneCpuMsPerLine, 2)} ms per line) | ${fmt(b.alone.linesPerSec, 0)} | - | - | - | ${fmt(b.aloneCores, 2)} | - |`,
    `| **live traffic with the batch running** | **${fmt(median(lps.filter((x): x is number => x !== null)), 0)}** (${lps.map((x) => fmt(x, 0)).join(', ')}) | ${fmt(med(b.withBatch, (r) => r.live.reqPerSec), 0)} | ${live(b.withBatch, (l) => l.p50)} (${perRound(b.withBatch, (l) => l.p50)}) | **${live(b.withBatch, (l) => l.p99)}** (${perRound(b.withBatch, (l) => l.p99)}) | ${fmt(med(b.withBatch, (r) => r.gatewayCores), 2)} | ${failures(b.withBatch)} |`,
    `| **live traffic without it** | - | ${fmt(med(b.without, (r) => r.live.reqPerSec), 0)} | ${live(b.without, (l) => l.p50)} (${perRound(b.without, (l) => l.p50)}) | **${live(b.without, (l) => l.p99)}** (${perRound(b.without, (l) => l.p99)}) | ${fmt(med(b.without, (r) => r.gatewayCores), 2)} | ${failures(b.without)} |`,
    '',
    `- batch lines: ${batchOk.toLocaleString('en-US')} completed, ${batchFailed} failed over ${BATCH_ROUNDS + 1} batches (statuses: ${[b.alone, ...b.withBatch.map((r) => r.batch)].map((x) => x?.status ?? '-').join(', ')})`,
    `- Reading: a Responses turn costs ${headline(false, 1)}x the gateway CPU of the same chat turn non-streamed and ${headline(true, 1)}x streamed with \`store: false\`, and ${headline(false, 2)}x / ${headline(true, 2)}x with the default store; a ${BATCH_LINES.toLocaleString('en-US')}-line batch ran at a median ${fmt(median(lps.filter((x): x is number => x !== null)), 0)} lines/s beside ${LIVE_RATE.toLocaleString('en-US')} req/s of live traffic, whose p99 went from ${live(b.without, (l) => l.p99)} ms without the batch to ${live(b.withBatch, (l) => l.p99)} ms with it (p50 ${live(b.without, (l) => l.p50)} -> ${live(b.withBatch, (l) => l.p50)} ms).`,
    '- Where a batch line\'s time went (hand-written, 2026-11-23): a `--cpu-prof` of the first run (one 2,000-line batch alone, 8.4 s of CPU, 3.7 ms per line, 265 lines/s) found 3.1 s in a count over every line of the batch after every settled line (O(lines^2)) and two fsynced commits per line on the event loop. Both were fixed before this run (16ddce6: the batch asks its partial indexes whether any line is pending or running; d452fd7: batch lines, invocations, responses and conversations commit on a synchronous=NORMAL connection): 1.27 ms per line, 657 lines/s alone, and the live p99 beside a batch went from 47.6 to 24.4 ms. What is left of a line\'s cost: `claim`\'s join-and-sort for the next ready line and the line\'s own chat turn.',
    `- pinning: ${env.pinning}; 1-minute load average ${env.load}; run ${new Date().toISOString()}, \`npm run build && node dist/bench/openai-surface.js\`${quick ? ' (BENCH_QUICK=1)' : ''}`,
  ].join('\n');
}

async function main(): Promise<void> {
  const { pinned, dir, loadLine } = standaloneBench('switchboard-bench-surface-');
  try {
    const sim = await startSimulator(dir, pinned ? 0 : null);
    const cfg = writeConfig(dir, sim.url);
    const gw = await startGateway(dir, pinned ? 1 : null, { name: 'gateway-surface', config: cfg.file, db: cfg.db, logLevel: 'warn' });
    const origin = new URL(gw.url).origin;
    const overheads: Overhead[] = [];
    const only = process.env.SURFACE_ROUTES;
    const other = process.env.SURFACE_OTHER_DIST;
    if ((only === 'stream' || only === 'json') && other) {
      const gwOther = await startGateway(dir, pinned ? 1 : null, { name: 'gateway-surface-other', config: cfg.file, db: join(dir, 'other.db'), logLevel: 'warn', dist: other });
      const builds = [
        { label: 'this build', origin, pid: gw.pid },
        { label: 'other build', origin: new URL(gwOther.url).origin, pid: gwOther.pid },
      ];
      await compareBuilds(builds, cfg.key, only === 'stream');
      log(`load ${loadLine()}`);
      return;
    }
    if (only === 'stream' || only === 'json') {
      const o = await routeOverhead(origin, cfg.key, gw.pid, only === 'stream');
      const cpu = (i: number): number[] => (o.runs[i] ?? []).map((r) => r.cpuUsPerReq ?? Number.NaN);
      for (const [i, side] of o.sides.entries()) {
        const ratios = cpu(i).map((c, r) => c / (cpu(0)[r] ?? Number.NaN));
        log(`${side.label}: CPU/req median ${median(cpu(i))?.toFixed(1)} us; vs chat median ${median(ratios)?.toFixed(2)}x (${ratios.map((x) => x.toFixed(2)).join(', ')}); probe ${JSON.stringify(o.probes[i])}`);
      }
      log(`load ${loadLine()}`);
      return;
    }
    for (const stream of [false, true]) overheads.push(await routeOverhead(origin, cfg.key, gw.pid, stream));
    const beside = await batchBesideLive(origin, cfg.key, gw.pid);
    const load = loadLine();
    const section = render(overheads, beside, { pinning: pinned ? 'bench process (autocannon, batch client) and simulator on core 0, gateway on core 1 (taskset -c)' : 'none', load });
    process.stdout.write(`${section}\n`);
    writeResultsSection('openai-surface', section);
  } finally {
    await stopAll();
  }
}

runIfEntryPoint(import.meta.url, 'openai-surface', main);
