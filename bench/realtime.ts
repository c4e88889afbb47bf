/**
 * Realtime transcription under load: N concurrent WebSocket sessions (default 200) streaming PCM16 in
 * real time to a segment-mode realtime endpoint on the simulator, each committing a segment every 2 s.
 * Reports the gateway's CPU and RSS while they are held, and the latency from commit to transcript
 * against the same segment posted straight to the simulator's transcription route at the same time.
 *   npm run build && node dist/bench/realtime.js     (standalone: writes its section of RESULTS.md)
 *   BENCH_REALTIME=1 npm run bench                    (as part of the full run)
 * Env: BENCH_REALTIME_SESSIONS (default 200), BENCH_REALTIME_SECONDS (steady seconds, default 20).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { parseConfig } from '../src/config.js';
import { clkTck, cpuTicks, rssKiB } from './cpu.js';
import { percentile } from './load.js';
import { driveSessions, probeDirect, RATE, type SessionStats, type Shape } from './realtime-sessions.js';
import { writeResultsSection } from './sections.js';
import { hasTaskset, onExitSync, pinSelf, runIfEntryPoint, startGateway, startSimulator, stopAll } from './targets.js';

const PROJECT = 'proj_live';
const SLUG = 'live';
const DIRECT_PER_SECOND = 10;

export interface Latency {
  readonly n: number;
  readonly p50: number | null;
  readonly p90: number | null;
  readonly p99: number | null;
  readonly max: number | null;
}

export interface RealtimeBenchResult {
  readonly shape: Shape;
  readonly seconds: number;
  readonly stats: SessionStats;
  readonly gateway: Latency;
  readonly direct: Latency & { readonly wrong: number; readonly failed: number };
  /** Gateway CPU over the steady window, as a percentage of one core. */
  readonly cpuPercent: number | null;
  readonly rssIdleKiB: number | null;
  readonly rssPeakKiB: number | null;
  readonly rssEndKiB: number | null;
  readonly notes: string[];
}

function latency(samples: number[]): Latency {
  const sorted = Float64Array.from(samples).sort();
  return { n: sorted.length, p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99), max: sorted.length ? (sorted[sorted.length - 1] ?? null) : null };
}

function writeRealtimeConfig(dir: string, simUrl: string): { file: string; db: string; key: string } {
  const key = `svc_live_${randomBytes(32).toString('base64url')}`;
  const db = join(dir, 'realtime.db');
  const raw = {
    server: { host: '127.0.0.1', port: 0 },
    storage: { path: db },
    projects: [
      {
        id: PROJECT,
        slug: 'live',
        rate_limit: { requests_per_minute: 0, tokens_per_minute: 0 },
        endpoints: [
          {
            id: randomUUID(),
            slug: SLUG,
            name: 'Live',
            kind: 'realtime',
            tier: 'gpu',
            model: { id: 'live-transcriber', context_window: 8192 },
            upstream: { base_url: simUrl, model: 'sim-whisper' },
            realtime: { mode: 'segment' },
          },
        ],
        keys: [{ value: key, scopes: ['inference'] }],
      },
    ],
  };
  parseConfig(raw, 'realtime bench config');
  const file = join(dir, 'realtime.yaml');
  writeFileSync(file, stringify(raw), { mode: 0o600 });
  return { file, db, key };
}

export async function runRealtimeBench(opts: { dir: string; simUrl: string; gatewayCore: number | null; sessions: number; seconds: number }): Promise<RealtimeBenchResult> {
  const loadBefore = loadavg()[0] ?? 0;
  const cfg = writeRealtimeConfig(opts.dir, opts.simUrl);
  const gw = await startGateway(opts.dir, opts.gatewayCore, { name: 'gateway-realtime', config: cfg.file, db: cfg.db, logLevel: 'warn' });
  try {
    const shape: Shape = { sessions: opts.sessions, chunkMs: 50, segmentMs: 2000 };
    const wsUrl = `${gw.url.replace(/^http/, 'ws')}/${PROJECT}/${SLUG}/v1/realtime`;
    // Warm-up: a few sessions for a few segments, so JIT and connection pools are hot.
    await driveSessions(wsUrl, cfg.key, { ...shape, sessions: 10 }, 2);
    await new Promise((r) => setTimeout(r, 500));
    const rssIdleKiB = rssKiB(gw.pid);
    let rssPeakKiB = rssIdleKiB ?? 0;
    const sampler = setInterval(() => (rssPeakKiB = Math.max(rssPeakKiB, rssKiB(gw.pid) ?? 0)), 250);
    let window = { ticks: null as number | null, at: 0 };
    let cpuPercent: number | null = null;
    let direct = { stop: async () => ({ latenciesMs: [] as number[], wrong: 0, failed: 0 }) };
    let probed = direct.stop();
    const stats = await driveSessions(wsUrl, cfg.key, shape, opts.seconds, {
      begin() {
        window = { ticks: cpuTicks(gw.pid), at: performance.now() };
        direct = probeDirect(opts.simUrl, shape.segmentMs, DIRECT_PER_SECOND);
      },
      end() {
        const ticks = cpuTicks(gw.pid);
        if (window.ticks !== null && ticks !== null) cpuPercent = ((ticks - window.ticks) / clkTck() / ((performance.now() - window.at) / 1000)) * 100;
        probed = direct.stop();
      },
    });
    clearInterval(sampler);
    const rssEndKiB = rssKiB(gw.pid);
    const directResult = await probed;
    const notes = [
      `${shape.sessions} sessions, PCM16 mono at ${RATE / 1000} kHz (the only input the realtime route takes: docs/realtime.md), ${shape.chunkMs} ms per append (${((shape.sessions * 1000) / shape.chunkMs).toLocaleString('en-US')} appends/s in all), sent on each session's own audio clock`,
      `each session commits every ${shape.segmentMs / 1000} s (${(shape.sessions / (shape.segmentMs / 1000)).toLocaleString('en-US')} segments/s in all); sessions start staggered over one period; server VAD on (energy computed on every frame) with silence_duration_ms 5000, so the cuts are the client's commits, which it can time`,
      `latency = client-side time from sending input_audio_buffer.commit to receiving ...transcription.completed; direct = the same 2 s segment as WAV posted to the simulator's /v1/audio/transcriptions by the same process, ${DIRECT_PER_SECOND}/s during the steady window, so both see the same client and simulator load`,
      'CPU = utime + stime of the gateway process over the steady window (every session streaming), as a share of one core; RSS from /proc, idle = after warm-up with no session open, peak sampled every 250 ms',
      `1-minute load average: ${loadBefore.toFixed(2)} at start, ${(loadavg()[0] ?? 0).toFixed(2)} at end`,
    ];
    return { shape, seconds: opts.seconds, stats, gateway: latency(stats.latenciesMs), direct: { ...latency(directResult.latenciesMs), wrong: directResult.wrong, failed: directResult.failed }, cpuPercent, rssIdleKiB, rssPeakKiB, rssEndKiB, notes };
  } finally {
    await gw.stop();
  }
}

const fmt = (n: number | null | undefined, digits = 0): string => (n === null || n === undefined ? '-' : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }));
const mib = (kib: number | null): string => (kib === null ? '-' : fmt(kib / 1024, 1));
const added = (a: number | null, b: number | null): string => (a === null || b === null ? '-' : `${a - b >= 0 ? '+' : ''}${fmt(a - b, 2)}`);

export function renderRealtimeBench(r: RealtimeBenchResult): string {
  const s = r.stats;
  const perSession = r.rssPeakKiB !== null && r.rssIdleKiB !== null && s.connected > 0 ? (r.rssPeakKiB - r.rssIdleKiB) / s.connected : null;
  return [
    `## Realtime transcription: ${fmt(r.shape.sessions)} concurrent sessions in segment mode, streaming in real time`,
    '',
    '| sessions held | steady s | segments committed | transcripts (exact) | wrong | failed | error events | closed early | gateway CPU (% of a core) | gateway RSS idle / peak / end MiB | RSS per session KiB |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    `| ${fmt(s.connected)} of ${fmt(r.shape.sessions)} | ${r.seconds} | ${fmt(s.commits)} | ${fmt(s.completed - s.wrongTranscripts)} | ${s.wrongTranscripts} | ${s.failed} | ${s.errorEvents} | ${s.closedEarly} | ${fmt(r.cpuPercent, 1)} | ${mib(r.rssIdleKiB)} / ${mib(r.rssPeakKiB)} / ${mib(r.rssEndKiB)} | ${fmt(perSession)} |`,
    '',
    '| commit to transcript | samples | p50 ms | p90 ms | p99 ms | max ms |',
    '|---|---:|---:|---:|---:|---:|',
    `| through the gateway (WebSocket, segment mode) | ${fmt(r.gateway.n)} | ${fmt(r.gateway.p50, 2)} | ${fmt(r.gateway.p90, 2)} | ${fmt(r.gateway.p99, 2)} | ${fmt(r.gateway.max, 2)} |`,
    `| direct to the simulator (HTTP POST, same segment) | ${fmt(r.direct.n)} | ${fmt(r.direct.p50, 2)} | ${fmt(r.direct.p90, 2)} | ${fmt(r.direct.p99, 2)} | ${fmt(r.direct.max, 2)} |`,
    `| added by the gateway | | ${added(r.gateway.p50, r.direct.p50)} | ${added(r.gateway.p90, r.direct.p90)} | ${added(r.gateway.p99, r.direct.p99)} | |`,
    '',
    `- gateway CPU per session: ${fmt(r.cpuPercent === null || s.connected === 0 ? null : (r.cpuPercent * 10) / s.connected, 2)} ms a second (decoding ${1000 / r.shape.chunkMs} appends, energy VAD, one segment every ${r.shape.segmentMs / 1000} s with its WAV upload, transcript events and usage row)`,
    '- the p50 difference is what the gateway adds; tails (p99, max) are dominated by the core the clients share with the simulator, where the direct probes run too, so they can even come out lower through the gateway',
    `- audio sent: ${fmt(s.audioSeconds)} s of the ${fmt(s.dueAudioSeconds)} s the sessions' clocks had due (${fmt((100 * s.audioSeconds) / Math.max(1, s.dueAudioSeconds), 1)}% of real time); direct probes: ${r.direct.wrong} wrong transcripts, ${r.direct.failed} failed`,
    ...r.notes.map((n) => `- ${n}`),
  ].join('\n');
}

async function main(): Promise<void> {
  const pinned = hasTaskset() && pinSelf(0);
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-realtime-'));
  onExitSync(() => rmSync(dir, { recursive: true, force: true }));
  try {
    const sim = await startSimulator(dir, pinned ? 0 : null);
    const result = await runRealtimeBench({
      dir,
      simUrl: sim.url,
      gatewayCore: pinned ? 1 : null,
      sessions: Number(process.env.BENCH_REALTIME_SESSIONS ?? 200),
      seconds: Number(process.env.BENCH_REALTIME_SECONDS ?? 20),
    });
    const section = `${renderRealtimeBench(result)}\n- pinning: ${pinned ? 'bench process (clients) and simulator on core 0; gateway on core 1' : 'none'}; run ${new Date().toISOString()}, \`node dist/bench/realtime.js\``;
    process.stdout.write(`${section}\n`);
    writeResultsSection('realtime', section);
  } finally {
    await stopAll();
  }
}

runIfEntryPoint(import.meta.url, 'realtime', main);
