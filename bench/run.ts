/**
 * The benchmark: simulator, bare proxy and gateway as child processes, autocannon in this process.
 *   npm run build && npm run bench
 * Env: BENCH_SECONDS (default 10), BENCH_QUICK=1 (50 connections, 3 s), BENCH_SOAK=1 (60 s RSS soak),
 * BENCH_INFO=0 (skip the info-log gateway rows), BENCH_TTFB_SAMPLES (default 500), BENCH_WEBHOOKS=1 (the webhook
 * drain of bench/webhook-drain.ts, its section of RESULTS.md rewritten), BENCH_REALTIME=1 (the realtime
 * sessions of bench/realtime.ts, likewise; BENCH_REALTIME_SESSIONS, BENCH_REALTIME_SECONDS).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeBenchConfig } from './config.js';
import { cpuModel, rssKiB } from './cpu.js';
import { runCpuRounds } from './cpu-rounds.js';
import { runLimiterCost } from './limiter-cost.js';
import { runLoad } from './load.js';
import { renderRealtimeBench, runRealtimeBench } from './realtime.js';
import { renderReport, type BenchReport, type Soak } from './report.js';
import { headOfLine, matrix, probe, runScenario, SMALL_BODY, STREAM_BODY, STREAM_HEADERS, type HolResult, type Row, type Target } from './scenarios.js';
import { RESULTS_FILE, spliceNamedSection } from './sections.js';
import { hasTaskset, onExitSync, pinSelf, startBareProxy, startGateway, startSimulator, stopAll, type Proc } from './targets.js';
import { sequential } from './ttfb.js';
import { renderWebhookDrain, runWebhookDrain } from './webhook-drain.js';

const quick = process.env.BENCH_QUICK === '1';
const seconds = Number(process.env.BENCH_SECONDS ?? (quick ? 3 : 10));
const soak = process.env.BENCH_SOAK === '1';
const withInfo = process.env.BENCH_INFO !== '0';
const ttfbSamples = Number(process.env.BENCH_TTFB_SAMPLES ?? 500);
/** Read before this process pins itself: afterwards its affinity shows one core. */
const machineCores = availableParallelism();
const CLIENT_CORE = 0;
/** Alternating unmetered / limits-on rounds per 50-connection scenario, for the limiter's cost. */
/** Alternating-round comparisons (gateway vs bare CPU, limiter cost): rounds and seconds per side. */
const ALTERNATING_ROUNDS = 7;
const ALTERNATING_ROUND_SECONDS = 4;
const METERED_LIMITS = { requestsPerMinute: 100_000_000, tokensPerMinute: 1_000_000_000_000, quotaRequests: 100_000_000 };
const PROXY_CORE = 1;

const log = (msg: string): void => void process.stderr.write(`bench: ${msg}\n`);

function setUpPinning(notes: string[]): { clientCore: number | null; proxyCore: number | null; text: string } {
  const cores = machineCores;
  if (!hasTaskset()) {
    notes.push('taskset not found: processes ran unpinned');
    return { clientCore: null, proxyCore: null, text: 'none (taskset not found): every process unpinned' };
  }
  if (cores < 2) return { clientCore: null, proxyCore: null, text: `none: only ${cores} core` };
  if (!pinSelf(CLIENT_CORE)) return { clientCore: null, proxyCore: null, text: 'none: taskset could not pin this process' };
  return {
    clientCore: CLIENT_CORE,
    proxyCore: PROXY_CORE,
    text: `client (autocannon, this process) and simulator on core ${CLIENT_CORE}; bare proxy and gateway on core ${PROXY_CORE} (taskset -c)`,
  };
}

function chatTarget(key: Target['key'], label: string, proc: Proc, path: string, headers: Record<string, string>, cpuOf: string): Target {
  return { key, label, url: `${new URL(proc.url).origin}${path}`, headers, cpuPid: proc.pid, cpuOf };
}

async function warmUp(target: Target): Promise<void> {
  const s = Math.min(1, seconds);
  await runLoad({ url: target.url, connections: 50, seconds: s, headers: target.headers, body: SMALL_BODY });
  await runLoad({ url: target.url, connections: 50, seconds: s, headers: { ...target.headers, ...STREAM_HEADERS }, body: STREAM_BODY });
}

async function main(): Promise<void> {
  const notes: string[] = [];
  const loadBefore = loadavg()[0] ?? 0;
  const pin = setUpPinning(notes);
  log(`pinning: ${pin.text}`);
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-'));
  onExitSync(() => rmSync(dir, { recursive: true, force: true }));
  try {
    const sim = await startSimulator(dir, pin.clientCore);
    log(`simulator ${sim.url} (pid ${sim.pid})`);
    const bare = await startBareProxy(dir, pin.proxyCore, sim.url);
    log(`bare proxy ${bare.url} (pid ${bare.pid})`);
    const cfg = writeBenchConfig({ upstreamUrl: sim.url, dir, metered: METERED_LIMITS });
    const gw = await startGateway(dir, pin.proxyCore, { name: 'gateway', config: cfg.file, db: cfg.dbPath, logLevel: 'warn' });
    log(`gateway ${gw.url} (pid ${gw.pid}, log level warn)`);
    const auth = { authorization: `Bearer ${cfg.key}` };
    const direct: Target = { key: 'direct', label: 'direct (simulator)', url: `${sim.url}/chat/completions`, headers: {}, cpuPid: sim.pid, cpuOf: 'simulator' };
    const targets: Target[] = [
      direct,
      chatTarget('bare', 'bare proxy', bare, cfg.chatPath, auth, 'bare proxy'),
      chatTarget('gateway', 'gateway', gw, cfg.chatPath, auth, 'gateway'),
    ];
    let infoTarget: Target | null = null;
    if (withInfo) {
      const infoCfg = writeBenchConfig({ upstreamUrl: sim.url, dir, name: 'gateway-info' });
      const gwInfo = await startGateway(dir, pin.proxyCore, { name: 'gateway-info', config: infoCfg.file, db: infoCfg.dbPath, logLevel: 'info' });
      log(`gateway (info logs) ${gwInfo.url} (pid ${gwInfo.pid}, stdout to ${gwInfo.logFile})`);
      infoTarget = chatTarget('gateway-info', 'gateway (info logs)', gwInfo, infoCfg.chatPath, { authorization: `Bearer ${infoCfg.key}` }, 'gateway');
      notes.push('gateway (info logs): the same gateway at SWITCHBOARD_LOG_LEVEL=info, stdout to a file; 50-connection scenarios only');
    }

    // Limits on: a twin project in the same gateway process with every limiter metered (project window,
    // token window, key quota) at ceilings no benchmark reaches, so every request pays for counting and
    // headers but none is refused. Same process: no JIT or heap difference between two processes to mistake
    // for the limiter's cost.
    const metered = cfg.metered!;
    const limitsTarget = chatTarget('gateway-limits', 'gateway (limits on)', gw, metered.chatPath, { authorization: `Bearer ${metered.key}` }, 'gateway');
    notes.push('gateway (limits on): a twin project in the same gateway process, metered at 100M requests/min (150M ceiling), 10^12 tokens/min and a 100M-request key quota, none reached; the plain project is unmetered (limits 0); compared in the limiter-cost section only');

    const probes = [];
    for (const t of [...targets, limitsTarget, ...(infoTarget ? [infoTarget] : [])]) {
      const p = await probe(t);
      log(`probe ${p.target}: non-streaming ${p.jsonStatus}, streaming ${p.streamStatus} with ${p.streamFrames} data frames`);
      probes.push(p);
      await warmUp(t);
    }

    const rows: Row[] = [];
    for (const scenario of matrix(quick)) {
      const these = [...targets, ...(infoTarget && scenario.connections === 50 ? [infoTarget] : [])];
      for (const target of these) {
        const row = await runScenario(target, scenario, seconds);
        rows.push(row);
        const l = row.load;
        log(
          `${scenario.label} / ${target.label}: ${Math.round(l.reqPerSec)} req/s, p50 ${l.p50?.toFixed(3)} ms, p99 ${l.p99?.toFixed(3)} ms, ` +
            `non-2xx ${l.non2xx}, errors ${l.errors}, CPU/req ${row.cpuUsPerReq?.toFixed(1) ?? '-'} us (${target.cpuOf})`,
        );
      }
    }

    const gatewayTarget = targets.find((t) => t.key === 'gateway')!;
    const limiterScenarios = matrix(quick).filter((s) => s.connections === 50);
    const bareTarget = targets.find((t) => t.key === 'bare')!;
    const roundSeconds = Math.min(seconds, ALTERNATING_ROUND_SECONDS);
    // The headline pairs, non-streamed and streamed: the gateway as `serve` runs it by default (info logs to
    // stdout) first, then the tuned one (warn logs), each against the bare proxy in alternating rounds.
    const cpuRounds = [];
    for (const scenario of limiterScenarios) {
      if (infoTarget) cpuRounds.push(await runCpuRounds(bareTarget, infoTarget, scenario, roundSeconds, ALTERNATING_ROUNDS, log));
      cpuRounds.push(await runCpuRounds(bareTarget, gatewayTarget, scenario, roundSeconds, ALTERNATING_ROUNDS, log));
    }
    // The access line's cost (issue 17: at most 10% of a request): the default gateway against the one at
    // warn, which writes no access line, in alternating rounds of their own.
    if (infoTarget) {
      for (const scenario of limiterScenarios) cpuRounds.push(await runCpuRounds(gatewayTarget, infoTarget, scenario, roundSeconds, ALTERNATING_ROUNDS, log));
    }
    const limiterCost = await runLimiterCost(gatewayTarget, limitsTarget, limiterScenarios, roundSeconds, ALTERNATING_ROUNDS, log);

    const ttfb = [];
    for (const t of targets) {
      const headers = { ...t.headers, ...STREAM_HEADERS };
      await sequential(t.url, headers, STREAM_BODY, Math.min(50, ttfbSamples)); // warm-up
      const result = await sequential(t.url, headers, STREAM_BODY, ttfbSamples);
      log(`TTFB ${t.label}: p50 ${result.ttfbP50?.toFixed(3)} ms, p99 ${result.ttfbP99?.toFixed(3)} ms, non-2xx ${result.non2xx}`);
      ttfb.push({ key: t.key, target: t.label, result });
    }

    const hol: HolResult[] = [];
    for (const t of targets.filter((x) => x.key !== 'direct')) {
      const h = await headOfLine(t, seconds);
      log(`head of line ${t.label}: small p99 alone ${h.alone.p99?.toFixed(3)} ms, with large ${h.small.p99?.toFixed(3)} ms; large non-2xx ${h.large.non2xx}`);
      hol.push(h);
    }

    let soakResult: Soak | null = null;
    if (soak) {
      const t = targets.find((x) => x.key === 'gateway')!;
      const before = rssKiB(gw.pid);
      const load = await runLoad({ url: t.url, connections: 50, seconds: 60, headers: t.headers, body: SMALL_BODY });
      soakResult = { target: 'gateway', seconds: 60, rssBeforeKiB: before, rssAfterKiB: rssKiB(gw.pid), load };
      log(`soak: RSS ${before} KiB -> ${soakResult.rssAfterKiB} KiB`);
    }

    let webhookSection: string | null = null;
    if (process.env.BENCH_WEBHOOKS === '1') {
      const drain = await runWebhookDrain({ dir, simUrl: sim.url, proxyCore: pin.proxyCore, seconds: Math.min(seconds, 5) });
      webhookSection = `${renderWebhookDrain(drain)}\n- run ${new Date().toISOString()} with the full bench (BENCH_WEBHOOKS=1); pinning as above`;
      log(`webhook drain: ${drain.runs.map((r) => `${r.label} ${Math.round(r.deliveriesPerSec)}/s`).join('; ')}`);
    }

    let realtimeSection: string | null = null;
    if (process.env.BENCH_REALTIME === '1') {
      const sessions = Number(process.env.BENCH_REALTIME_SESSIONS ?? 200);
      const rt = await runRealtimeBench({ dir, simUrl: sim.url, gatewayCore: pin.proxyCore, sessions, seconds: Number(process.env.BENCH_REALTIME_SECONDS ?? 20) });
      realtimeSection = `${renderRealtimeBench(rt)}\n- run ${new Date().toISOString()} with the full bench (BENCH_REALTIME=1); pinning as above`;
      log(`realtime: ${rt.stats.connected} sessions, commit to transcript p50 ${rt.gateway.p50?.toFixed(2)} ms (direct ${rt.direct.p50?.toFixed(2)} ms), gateway CPU ${rt.cpuPercent?.toFixed(1)}% of a core`);
    }

    notes.push(`1-minute load average: ${loadBefore.toFixed(2)} at start, ${(loadavg()[0] ?? 0).toFixed(2)} at end`);
    const env = ['BENCH_QUICK', 'BENCH_SECONDS', 'BENCH_SOAK', 'BENCH_INFO', 'BENCH_TTFB_SAMPLES', 'BENCH_WEBHOOKS', 'BENCH_REALTIME']
      .filter((k) => process.env[k] !== undefined)
      .map((k) => `${k}=${process.env[k]}`);
    const report: BenchReport = {
      command: [...env, 'npm run bench'].join(' '),
      date: new Date().toISOString(),
      nproc: machineCores,
      cpuModel: cpuModel(),
      node: process.version,
      pinning: pin.text,
      seconds,
      quick,
      probes,
      rows,
      ttfb,
      hol,
      cpuRounds,
      limiterCost,
      soak: soakResult,
      notes,
    };
    const md = renderReport(report);
    process.stdout.write(`${md}\n`);
    const kept = withKeptSections(md, RESULTS_FILE);
    const withWebhooks = webhookSection ? spliceNamedSection(kept, 'webhook-drain', webhookSection) : kept;
    writeFileSync(RESULTS_FILE, realtimeSection ? spliceNamedSection(withWebhooks, 'realtime', realtimeSection) : withWebhooks);
    log(`wrote ${RESULTS_FILE}`);
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Sections other benches splice into RESULTS.md between `<!-- name -->` and `<!-- /name -->` survive a full run. */
function withKeptSections(md: string, file: string): string {
  if (!existsSync(file)) return md;
  const kept = readFileSync(file, 'utf8').match(/<!-- ([\w-]+) -->[\s\S]*?<!-- \/\1 -->/g) ?? [];
  return kept.length === 0 ? md : `${md.trimEnd()}\n\n${kept.join('\n\n')}\n`;
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
    void stopAll().finally(() => process.exit(1));
  },
);
